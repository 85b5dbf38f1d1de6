#!/usr/bin/env bash
# attach-bullseye: `tlsmeter attach` on Debian 11's own `openssl s_client` (glibc 2.31, OpenSSL
# 1.1.1w, run through its own ld-2.31.so) while it downloads slowly (tests/tools/throttle.py),
# with the dist build's tlsmeter-attach and libtlsmeter-attach.so (make dist: glibc >= 2.28):
# the 1.1.1 copy measured from its next record (the connection joined), the bytes read while
# attached within what s_client wrote meanwhile, every GOT entry back, the download intact.
# tlsm-arch: x86_64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=tests/lib-bullseye.sh
. "$TLSM_TOP/tests/lib-bullseye.sh"
d=$(case_dir)
tls_init "$d"
N=attach-bullseye
if [ -n "${TLSM_SAN:-}" ] || under_qemu || in_userland; then
    skip "$N: the host's kernel and the dist build (no sanitizers)"
    exit 0
fi
bz_setup "$N" x86_64
DIST=$(dirname "$BZ_LIB")
tls_make_file big.bin $((24 * 1024 * 1024))
want_sha=$(tls_sha "$TLS_WWW/big.bin")
tls_server_start 1.3 TLS_AES_256_GCM_SHA384 || { fail "$N: no server"; exit 0; }
"$TLSM_PY" "$TLSM_TOOLS/throttle.py" "$d/thr.port" "$TLS_PORT" 8000000 120 2>"$d/thr.err" &
TLS_PIDS+=("$!")
for _ in $(seq 100); do
    [ -s "$d/thr.port" ] && break
    sleep 0.05
done
printf 'GET /big.bin HTTP/1.0\r\n\r\n' >"$d/req"
bz_cmd openssl s_client -connect "127.0.0.1:$(cat "$d/thr.port")" -quiet -CAfile "$TLS_CERT" \
    -servername localhost
"${BZ_CMD[@]}" <"$d/req" >"$d/out" 2>"$d/err" &
pid=$!
TLS_PIDS+=("$pid")
size() { stat -c %s "$d/out" 2>/dev/null || echo 0; }
for _ in $(seq 100); do
    [ "$(size)" -ge $((4 * 1024 * 1024)) ] && break
    sleep 0.05
done
python3 "$TLSM_TOOLS/gotsnap.py" "$pid" >"$d/got0"
b0=$(size)
"$DIST/tlsmeter-attach" --lib "$DIST/libtlsmeter-attach.so" -o "$d/bz.%p.trace" --for 1 "$pid" \
    2>"$d/attach.err"
arc=$?
b1=$(size)
python3 "$TLSM_TOOLS/gotsnap.py" --compare "$d/got0" "$pid" >"$d/got1" 2>&1
grc=$?
wait "$pid"
rc=$?
check "$N: attached and detached ($(grep -o 'stopped for [0-9.]* ms' "$d/attach.err" | tr '\n' ' '))" \
    test "$arc" = 0
check "$N: every GOT entry is back ($(tail -n 1 "$d/got1"))" test "$grc" = 0
body_sha=$(python3 -c 'import hashlib, sys
d = open(sys.argv[1], "rb").read()
print(hashlib.sha256(d.split(b"\r\n\r\n", 1)[1]).hexdigest())' "$d/out")
check "$N: s_client finished (exit 0) with the body intact" test "$rc:$body_sha" = "0:$want_sha"
T=$(ls "$d"/bz.*.trace 2>/dev/null | head -n 1)
tlsm_jsonl "$T"
out=$(python3 "$TLSM_TOOLS/attachcheck.py" "$T")
got=$(echo "$out" | sed -n 's/.* bytes=\([0-9]*\) .*/\1/p')
if ! echo "$out" | grep -q FAIL && grep -q '"version":"OpenSSL 1.1.1' "$T" &&
    [ "${got:-0}" -le $((b1 - b0 + 200 * 1024)) ] && [ "$got" -ge $((b1 - b0 - 1024 * 1024)) ]; then
    pass "$N: OpenSSL 1.1.1 measured from the next record: $(echo "$out" | head -n 1); s_client wrote $((b1 - b0)) bytes meanwhile"
else
    fail "$N: $(echo "$out" | tr '\n' ' ') against $((b1 - b0)) bytes written meanwhile; versions: $(grep -o '"version":"[^"]*' "$T" | sort -u | tr '\n' ' ')"
fi
