#!/usr/bin/env bash
# safe-dl-stress: RTLD_DEEPBIND and plain dlopen/dlclose from several threads, nested in
# constructors and destructors, while two other threads download over HTTPS through plugins
# they load RTLD_DEEPBIND (their SSL_* calls bind past the hooks, so the preload rewrites their
# GOT slots on every load), for TLSM_DLSAFE_SECS seconds (default 60; fewer for a quick local
# run) against a local openssl s_server. The traced run must not crash or hang (bounded by
# timeout), must end as a short untraced run does (exit code, output), and its trace must
# still be right: well formed (tracecheck.py), and the application-data records hold the
# bytes the program received. The pass line says how many of them the read events carry.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=tests/lib-dlsafe.sh
. "$TLSM_TOP/tests/lib-dlsafe.sh"
N=safe-dl-stress
SECS=${TLSM_DLSAFE_SECS:-60}
d=$(case_dir)
tls_init "$d"
tls_need_preload "$N"
ds_init "$N" "$d"
ds_need_deepbind "$N"
tls_make_file body.bin 100000
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "$N: openssl s_server did not start"
    exit 0
fi

# Untraced, a few seconds: the output to compare with (it names no counts).
DS_TIMEOUT=$((SECS + 60))
ds_one "$d/plain" stress "$d" "$((SECS < 3 ? SECS : 3))" "$TLS_PORT" "$TLS_CERT" /body.bin
if [ "$(cat "$d/plain.rc")" != 0 ]; then
    fail "$N: untraced run failed (exit $(cat "$d/plain.rc")): $(head -c 300 "$d/plain.err")"
    exit 0
fi
t0=$SECONDS
ds_one "$d/traced" LD_PRELOAD="$TLSM_PRELOAD" TLSMETER_OUT="$d/traced.%p.trace" stress "$d" \
    "$SECS" "$TLS_PORT" "$TLS_CERT" /body.bin
took=$((SECONDS - t0))
tls_server_stop
rc=$(cat "$d/traced.rc")
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    fail "$N: the traced run hung (no exit within $DS_TIMEOUT s for a $SECS s run)"
    exit 0
elif [ "$rc" -gt 128 ]; then
    fail "$N: the traced run died of SIG$(kill -l "$((rc - 128))" 2>/dev/null) after $took s"
    exit 0
elif ! why=$(tls_same_run x "$d/plain" "$d/traced"); then
    fail "$N: the traced run ended otherwise than untraced: $why"
    exit 0
fi
pass "$N: $SECS s traced ($took s): no crash, no hang, output and exit code as untraced ($(cat "$d/traced.stats"))"
tlsm_jsonl "$d/traced.%p.trace"
tls_traces "$d/traced.*.trace"
if [ "${#TRACES[@]}" -ne 1 ]; then
    fail "$N: ${#TRACES[@]} traces, want 1"
    exit 0
fi
got=$(ds_stat "$d/traced.stats" got)
tls_trace_check "$N trace" "${TRACES[0]}"
# Records: every application-data byte the program received was decrypted in a traced record.
# Reads: how many of those bytes the read events carry (the plugins' SSL_read calls reach the
# hooks only through their rewritten GOT slots; tlsmeter's notices say when it stops).
out=$("$TLSM_PY" -c 'import json, sys
pt = reads = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("ev") == "rec" and e.get("type") == 23 and e.get("dir", "in") == "in":
        pt += e.get("pt", 0)
    elif e.get("ev") == "read" and isinstance(e.get("got"), int) and e["got"] > 0 \
            and not str(e.get("fn", "")).startswith("SSL_peek"):
        reads += e["got"]
print(pt, reads)' "${TRACES[0]}")
read -r pt reads <<<"$out"
notes=$(tls_notes "$d/traced.err")
if [ "$pt" = "$got" ]; then
    pass "$N records: $pt bytes in application-data records = $got bytes received (read events: $reads bytes; $notes tlsmeter notices)"
else
    fail "$N records: $pt bytes in application-data records, the program received $got (read events: $reads bytes)"
fi
