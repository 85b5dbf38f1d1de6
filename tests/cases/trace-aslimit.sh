#!/usr/bin/env bash
# trace-aslimit: under a tight `ulimit -v` (RLIMIT_AS) tlsmeter does not take the address
# space the program needs. The test finds by bisection (bounded: 14 steps) the smallest
# limit under which an untraced Python download works, adds tlsmeter's fixed footprint
# (library and tables, measured here as the VmSize it adds at start) and 128 KiB, and runs
# the download traced under that limit: it must succeed (same body), and its trace must be
# whole, or say in its end line (io_error) and a warning that tlsmeter gave up near
# RLIMIT_AS. Without a limit the chunks stay 256 KiB (another run checks the trace is whole).
# tlsm-arch: x86_64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload trace-aslimit
if under_qemu || [ -n "${TLSM_SAN:-}" ]; then
    skip "trace-aslimit: needs the host's python, and no sanitizer (its shadow memory needs terabytes of address space)"
    exit 0
fi
size=$((3 * 1024 * 1024))
tls_make_file f.bin "$size"
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "trace-aslimit: openssl s_server did not start"
    exit 0
fi
# One download under a limit of $1 KiB (untraced when $2 is empty): true if it worked.
get() {
    rm -f "$d/body"
    tls_run "$d/get" "$2" bash -c 'ulimit -v "$1" && shift && exec "$@"' _ "$1" \
        "$TLSM_PY" "$TLSM_TOOLS/pyclient.py" --port "$TLS_PORT" --cafile "$TLS_CERT" \
        --path /f.bin --out "$d/body"
    [ "$(cat "$d/get.rc")" = 0 ] && [ "$(tls_size "$d/body" 2>/dev/null)" = "$size" ]
}
lo=8192 hi=1048576
if ! get "$hi" ""; then
    skip "trace-aslimit: the untraced download fails even under a 1 GiB limit: $(head -c 200 "$d/get.err")"
    exit 0
fi
for _ in $(seq 14); do
    [ $((hi - lo)) -le 64 ] && break
    mid=$(((lo + hi) / 2))
    if get "$mid" ""; then hi=$mid; else lo=$mid; fi
done
need=$hi
vm() { tls_run "$d/vm" "$1" "$TLSM_PY" -c 'import ssl; print(open("/proc/self/status").read().split("VmSize:")[1].split()[0])'; cat "$d/vm.out"; }
fp=$(($(vm "$d/vm.%p.jsonl") - $(vm "")))
limit=$((need + fp + 128))
echo "untraced need $need KiB, tlsmeter footprint $fp KiB, traced limit $limit KiB"
rm -f "$d"/t.*.jsonl
if ! get "$limit" "$d/t.%p.jsonl"; then
    fail "trace-aslimit: the traced download failed under $limit KiB (untraced needs $need, tlsmeter adds $fp at start): exit $(cat "$d/get.rc"): $(head -c 300 "$d/get.err")"
    exit 0
fi
tls_traces "$d/t.*.jsonl"
check "trace-aslimit: the traced download works under $limit KiB; its trace is whole or says it gave up near RLIMIT_AS" \
    "$TLSM_PY" - "$d/get.err" "${TRACES[@]}" <<'PY'
import json, sys
err = open(sys.argv[1]).read()
ok = 0
for f in sys.argv[2:]:
    ev = [json.loads(l) for l in open(f) if l.strip()]
    end = ev[-1]
    assert end["ev"] == "end", "%s: last line %s" % (f, end["ev"])
    if end["dropped"] == 0:
        ok += 1
        continue
    assert "RLIMIT_AS" in end.get("io_error", ""), "%s: dropped %d, io_error %r" % (f, end["dropped"], end.get("io_error"))
    assert err.count("RLIMIT_AS") == 1, "want one RLIMIT_AS warning on stderr: %r" % err
    ok += 1
assert ok >= 1, "no trace"
PY
# No limit: full-size chunks, a whole trace.
rm -f "$d"/t.*.jsonl
get unlimited "$d/t.%p.jsonl"
tls_traces "$d/t.*.jsonl"
if [ "$(cat "$d/get.rc")" = 0 ] && [ "${#TRACES[@]}" = 1 ] && grep -q '"ev":"end".*"dropped":0' "${TRACES[0]}"; then
    pass "trace-aslimit: without a limit the trace is whole"
else
    fail "trace-aslimit: without a limit: exit $(cat "$d/get.rc"), traces ${#TRACES[@]}"
fi
