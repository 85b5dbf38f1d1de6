#!/usr/bin/env bash
# hostile-trace-bytes: any bytes in a setting or in the program's name give a trace that is
# valid UTF-8 JSON on every line and that the analyzer reads. A \xff in
# TLSMETER_BACKEND_PROPQ or TLSMETER_OUT was written raw into header.config (the analyzer
# refused the whole file: "first line is not JSON", exit 4); a 3000-byte setting was cut
# mid-string; a non-ASCII exe/comm became '?'. Valid UTF-8 is kept as the user wrote it, a
# byte outside UTF-8 becomes the text \xHH (docs/trace-format.md, "Strings").
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
A=$O/tlsmeter-analyze
tls_init "$d"
tls_need_preload hostile-trace-bytes

tls_make_file c.bin $((64 * 1024))
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "hostile-trace-bytes: openssl s_server did not start"
    exit 0
fi

# valid NAME TRACE KEY WANT: every line of TRACE is strict UTF-8 JSON, the analyzer reads it
# (exit 0), and header field KEY (config.NAME for a setting) equals WANT.
valid() {
    local name="hostile-trace-bytes $1" trace=$2 key=$3 want=$4 why
    if [ ! -s "$trace" ]; then
        fail "$name: no trace $trace"
        return
    fi
    if ! why=$("$TLSM_PY" - "$trace" "$key" "$want" <<'PY' 2>&1
import json, sys
path, key, want = sys.argv[1], sys.argv[2], sys.argv[3].encode("utf-8", "surrogateescape")
head = None
for no, raw in enumerate(open(path, "rb").read().split(b"\n")[:-1], 1):
    try:
        o = json.loads(raw.decode("utf-8"))
    except ValueError as e:
        sys.exit("line %d is not strict UTF-8 JSON: %s: %r" % (no, e, raw[:120]))
    head = head or o
v = head
for k in key.split("."):
    v = v.get(k) if isinstance(v, dict) else None
if v is None or v.encode("utf-8") != want:
    sys.exit("header %s is %r, want %r" % (key, v, want))
PY
    ); then
        fail "$name: $why"
    elif ! "$A" --json "$trace" >"$trace.json" 2>"$trace.err"; then
        fail "$name: tlsmeter-analyze exit $?: $(head -c 300 "$trace.err")"
    else
        pass "$name"
    fi
}

# download TAG TRACE VAR=VALUE...: one traced download by curl (else our C client).
download() {
    local p=$d/$1 trace=$2
    shift 2
    TLS_ENV=("$@")
    tls_client "$TLS_DL" "$TLS_PORT" c.bin "$p" "$trace"
    TLS_ENV=()
}

download propq "$d/propq.%p.jsonl" TLSMETER_BACKEND_PROPQ=$'fips=\xffno'
tls_traces "$d/propq.*.jsonl"
valid propq-non-utf8 "${TRACES[0]:-}" config.TLSMETER_BACKEND_PROPQ 'fips=\xffno'

download out "$d/out"$'\xff'".%p.jsonl"
tls_traces "$d/out"$'\xff'".*.jsonl"
valid out-non-utf8 "${TRACES[0]:-}" config.TLSMETER_OUT "$d/out\\xff.%p.jsonl"

long=$(printf 'x%.0s' $(seq 1 3000))
download long "$d/long.%p.jsonl" TLSMETER_BACKEND_PROPQ="$long"
tls_traces "$d/long.*.jsonl"
valid long-setting-not-cut "${TRACES[0]:-}" config.TLSMETER_BACKEND_PROPQ \
    "(3000 bytes: too long for the header)"

# The program's own name: valid UTF-8 (ü, €) kept, the lone \xff as \xff.
name="cürl-€-"$'\xff'
cp "$TLSM_PROGS/mtclient" "$d/$name"
p=$d/name
tls_run "$p" "$d/name.%p.jsonl" "$d/$name" -p "$TLS_PORT" -c "$TLS_CERT" -t 1 -n 1 \
    -o "$p.body" /c.bin
tls_traces "$d/name.*.jsonl"
valid exe-non-ascii-kept "${TRACES[0]:-}" exe "$d/cürl-€-\\xff"
valid comm-non-ascii-kept "${TRACES[0]:-}" comm "cürl-€-\\xff"
tls_server_stop
