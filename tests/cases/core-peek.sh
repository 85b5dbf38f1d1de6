#!/usr/bin/env bash
# core-peek: a client that SSL_peek()s (and SSL_peek_ex()s) the bytes before every read. Peeks
# get read events of their own (fn SSL_peek*), their records count once, and their bytes are
# not counted twice: neither in the connection's close totals nor by the analyzer.
# tlsm-arch: x86_64 aarch64
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload core-peek

SIZES=(1 16384 100003 262147)
PATHS=()
for s in "${SIZES[@]}"; do
    tls_make_file "f$s.bin" "$s"
    PATHS+=("/f$s.bin")
done
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "core-peek: openssl s_server did not start"
    exit 0
fi
# 2 threads x 4 connections: odd ones use SSL_read_ex/SSL_peek_ex, even ones SSL_read/SSL_peek.
p=$d/peek
tls_run "$p.plain" "" "$TLSM_PROGS/mtclient" -k -p "$TLS_PORT" -c "$TLS_CERT" -t 2 -n 4 "${PATHS[@]}"
tls_run "$p.traced" "$p.trace.%p.jsonl" "$TLSM_PROGS/mtclient" -k -p "$TLS_PORT" \
    -c "$TLS_CERT" -t 2 -n 4 "${PATHS[@]}"
tls_server_stop
if ! why=$(tls_mt_ok "$p.traced.out" 8) || ! tls_mt_ok "$p.plain.out" 8 >/dev/null; then
    fail "core-peek: downloads not intact: $why"
    exit 0
fi
tls_traces "$p.trace.*.jsonl"
got=$(awk '/^conn /{for (i = 2; i <= NF; i++) if ($i ~ /^got=/) s += substr($i, 5)} END{print s + 0}' \
    "$p.traced.out")
tls_trace_check "core-peek trace" "${TRACES[0]}" --mt-report "$p.traced.out" --got "$got" \
    --full-read --conns 8 --closed
# The analyzer of the build under test (under qemu for aarch64).
run_target "$O/tlsmeter-analyze" --json "${TRACES[0]}" >"$p.summary.json" 2>"$p.summary.err"
check "core-peek: peek events, close totals and the analyzer count the bytes once" \
    "$TLSM_PY" - "${TRACES[0]}" "$got" "$p.summary.json" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
got = int(sys.argv[2])
fns = {e["fn"] for e in ev if e["ev"] == "read"}
assert {"SSL_peek", "SSL_peek_ex", "SSL_read", "SSL_read_ex"} <= fns, fns
closes = [e for e in ev if e["ev"] == "conn" and e["phase"] == "close"]
assert sum(c["got"] for c in closes) == got, (sum(c["got"] for c in closes), got)
recs = [e for e in ev if e["ev"] == "rec" and e.get("dir", "in") == "in" and e["type"] == 23]
assert sum(r["pt"] for r in recs) == got
j = json.load(open(sys.argv[3]))
assert j["bytes_read"] == got, (j["bytes_read"], got)
PY
