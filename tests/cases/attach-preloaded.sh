#!/usr/bin/env bash
# attach-preloaded: `tlsmeter attach` on a process that has libtlsmeter.so preloaded already is
# refused by the library (the same calls must not be traced twice), with one sentence and exit
# status 1; the process goes on as before: its download intact, its own trace complete, and no
# second trace.
# tlsm-arch: x86_64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload attach-preloaded
if [ -n "${TLSM_SAN:-}" ] || under_qemu || in_userland; then
    skip "attach-preloaded: needs the host's programs and a library built without sanitizers"
    exit 0
fi
tls_make_file big.bin $((8 * 1024 * 1024))
tls_server_start 1.3 TLS_AES_128_GCM_SHA256 || { fail "attach-preloaded: no server"; exit 0; }
mkdir -p "$d/tr"
env LD_PRELOAD="$TLSM_PRELOAD" TLSMETER_OUT="$d/tr/pre.%p.trace" \
    "$TLSM_PROGS/slowget" "$TLS_PORT" big.bin "$d/sg.log" 1000 >"$d/sg.out" 2>"$d/sg.err" &
pid=$!
TLS_PIDS+=("$pid")
sleep 0.5
out=$("$O/tlsmeter-attach" -o "$d/tr/att.%p.trace" --for 0.2 "$pid" 2>&1)
rc=$?
wait "$pid"
prc=$?
if [ "$rc" = 1 ] && [[ $out == *"tlsmeter is preloaded into this process"* ]]; then
    pass "attach-preloaded: refused with exit 1: $out"
else
    fail "attach-preloaded: exit $rc: $out"
fi
check "attach-preloaded: the program finished (exit 0) with the whole body" \
    test "$prc:$(sed -n 's/.*sha256=//p' "$d/sg.out")" = "0:$(tls_sha "$TLS_WWW/big.bin")"
T=$(ls "$d"/tr/pre.*.trace 2>/dev/null | head -n 1)
tlsm_jsonl "$T"
check "attach-preloaded: one trace, the preload's, complete ($(ls "$d/tr" | tr '\n' ' '))" \
    sh -c "[ \"\$(ls '$d/tr' | wc -l)\" = 1 ] && grep -q '\"ev\":\"end\"' '$T'"
