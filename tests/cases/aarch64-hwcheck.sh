#!/usr/bin/env bash
# aarch64-hwcheck: scripts/tlsmeter-hwcheck on the arm64 side of the cross build: the sysroot's
# libcrypto.so.3 is `hardware` (aese and pmull counted, platform debian-arm64) and passes
# --require-hw; libtlsmeter.so carries no crypto of its own (no-aes); --pid on an arm64 program
# running under qemu finds the guest's libcrypto (qemu maps the guest's files, so /proc/PID/maps
# lists them; the emulator itself is listed too: it carries AES tables to emulate `aese`).
# tlsm-arch: aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
. "$TLSM_TOP/tests/lib-a64tls.sh"
HW=$TLSM_TOP/scripts/tlsmeter-hwcheck
lib=$TLSM_SYSROOT/usr/lib/aarch64-linux-gnu
d=$(case_dir)
if ! command -v "${CROSS_COMPILE:-aarch64-linux-gnu-}objdump" >/dev/null; then
    fail "aarch64-hwcheck: no ${CROSS_COMPILE:-aarch64-linux-gnu-}objdump (binutils-aarch64-linux-gnu)"
    exit 0
fi

# j FILE BASENAME EXPR: a Python expression over the "libraries" entry l named BASENAME.
j() {
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
l = next((x for x in d.get("libraries", []) if x["path"].endswith("/" + sys.argv[2])), None)
print(eval(sys.argv[3]))' "$@"
}

"$HW" --json --require-hw "$lib/libcrypto.so.3" "$TLSM_PRELOAD" >"$d/files.json" 2>"$d/files.err"
rc=$?
check "aarch64-hwcheck libcrypto.so.3: verdict hardware, --require-hw exits 0" \
    test "$(j "$d/files.json" libcrypto.so.3 "l['arch'], l['verdict']")/$rc" = "('aarch64', 'hardware')/0"
check "aarch64-hwcheck libcrypto.so.3: aese > 0, pmull > 0, platform debian-arm64" \
    test "$(j "$d/files.json" libcrypto.so.3 \
        "l['insns'].get('aese', 0) > 0 and l['insns'].get('pmull', 0) > 0 and l['platform']")" = debian-arm64
check "aarch64-hwcheck libtlsmeter.so: aarch64, no-aes" \
    test "$(j "$d/files.json" libtlsmeter.so "l['arch'], l['verdict']")" = "('aarch64', 'no-aes')"

# A live arm64 TLS server under qemu.
a64_init "$d"
if a64_server 1.3 TLS_AES_128_GCM_SHA256; then
    "$HW" --json --pid "$A64_SRV" >"$d/pid.json" 2>"$d/pid.err"
    check "aarch64-hwcheck --pid (s_server under qemu): finds the guest's libcrypto.so.3, hardware" \
        test "$(j "$d/pid.json" libcrypto.so.3 "l['arch'], l['verdict']")" = "('aarch64', 'hardware')"
    a64_server_stop
else
    fail "aarch64-hwcheck --pid: arm64 s_server did not start"
fi
grep -q '^FAIL aarch64-hwcheck' "$TLSM_RESULTS" || rm -rf "$d"
