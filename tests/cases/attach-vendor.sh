#!/usr/bin/env bash
# attach-vendor: `tlsmeter attach` on a download through a vendor library whose embedded
# OpenSSL is hidden (tests/vendor layout 6: no exported symbol, no PLT for the record calls).
# An attach has no GOT slot to rewrite there, and the copy's provider tables would only reach
# ciphers fetched after the attach: the copy must be named as not seen, no verdict may speak
# past it, and the program must finish as without tlsmeter, with every GOT entry back.
# tlsm-arch: x86_64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
A=$O/tlsmeter-attach
if [ -n "${TLSM_SAN:-}" ] || under_qemu || in_userland; then
    skip "attach-vendor: needs the host's programs and a library built without sanitizers"
    exit 0
fi
V=$O/vendor
if ! out=$("$TLSM_TOP/tests/vendor/build" "$V" 2>&1); then
    skip "attach-vendor: the vendor fixtures did not build: $(echo "$out" | tail -n 1)"
    exit 0
fi
tls_make_file big.bin $((24 * 1024 * 1024))
want_sha=$(tls_sha "$TLS_WWW/big.bin")
tls_server_start 1.3 TLS_AES_128_GCM_SHA256 || { fail "attach-vendor: no server"; exit 0; }
"$TLSM_PY" "$TLSM_TOOLS/throttle.py" "$d/thr.port" "$TLS_PORT" 8000000 120 2>"$d/thr.err" &
TLS_PIDS+=("$!")
for _ in $(seq 100); do
    [ -s "$d/thr.port" ] && break
    sleep 0.05
done
"$V/hidden/vclient" -p "$(cat "$d/thr.port")" -c "$TLS_CERT" -f big.bin >"$d/vc.out" 2>"$d/vc.err" &
pid=$!
TLS_PIDS+=("$pid")
sleep 1
python3 "$TLSM_TOOLS/gotsnap.py" "$pid" >"$d/got0"
"$A" -o "$d/vc.%p.trace" --for 1 "$pid" 2>"$d/attach.err"
arc=$?
python3 "$TLSM_TOOLS/gotsnap.py" --compare "$d/got0" "$pid" >"$d/got1" 2>&1
grc=$?
wait "$pid"
rc=$?
check "attach-vendor: attached and detached ($(grep -o 'stopped for [0-9.]* ms' "$d/attach.err" | tr '\n' ' '))" \
    test "$arc" = 0
check "attach-vendor: every GOT entry is back ($(tail -n 1 "$d/got1"))" test "$grc" = 0
check "attach-vendor: the download finished intact, exit code 0" \
    test "$rc:$(grep -c "sha256=$want_sha" "$d/vc.out")" = "0:1"
T=$(ls "$d"/vc.*.trace 2>/dev/null | head -n 1)
rep=$("$O/tlsmeter-analyze" "$T" 2>&1)
if echo "$rep" | grep -q '^not seen .*libvendor.so' && echo "$rep" | grep -q '\[blind-copy\]' &&
    ! echo "$rep" | grep -Eq '\[(hardware-aes|software-aes)\]'; then
    pass "attach-vendor: the hidden copy is named as not seen, and no class verdict speaks past it"
else
    fail "attach-vendor: the report does not name the hidden copy as blind: $(echo "$rep" | head -n 8 | tr '\n' ' ')"
fi
