#!/usr/bin/env bash
# speed: scripts/tlsmeter-speed runs `openssl speed -evp` on the hardware and the software path
# and prints MB/s and ratios. Shape of the table and the JSON, a hardware/software ratio > 1 for
# AES-128-GCM at 16 KiB (a sanity check, not a performance test), an inherited OPENSSL_ia32cap
# is ignored, the ChaCha20 what-if uses ChaCha20 at default capabilities (the AES mask is no
# part of it), and an arm64 openssl under qemu gets the emulation warning. About 12 s.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=scripts/tlsmeter-mask.sh
. "$TLSM_TOP/scripts/tlsmeter-mask.sh"

d=$(case_dir)
SP=$TLSM_TOP/scripts/tlsmeter-speed

# The table: 16 KiB AES-128-GCM both directions, with a mask already in the environment (it
# must not leak into the hardware run, or the ratio would be ~1).
OPENSSL_ia32cap="$TLSM_IA32_SOFT_MASK" "$SP" --seconds 1 --ciphers aes-128-gcm --sizes 16384 \
    >"$d/text.out" 2>"$d/text.err"
echo $? >"$d/text.rc"
table_shape() {
    [ "$(cat "$d/text.rc")" = 0 ] || { echo "exit $(cat "$d/text.rc"): $(cat "$d/text.err")"; return 1; }
    grep -qE '^CIPHER +BYTES +DIR +HW MB/s +SW MB/s +HW/SW$' "$1" || { echo "no header in $1"; return 1; }
    for dir in decrypt encrypt; do
        grep -qE "^AES-128-GCM +16384 +$dir +[0-9]+\.[0-9] +[0-9]+\.[0-9] +[0-9]+\.[0-9]x$" "$1" ||
            { echo "no AES-128-GCM 16384 $dir row in $1"; return 1; }
    done
    grep -qF "software: OPENSSL_ia32cap=$TLSM_IA32_SOFT_MASK " "$1" || { echo "mask not shown"; return 1; }
}
check "speed table: exit 0, header, one row per direction, the software mask shown" \
    table_shape "$d/text.out"
ratio=$(awk '$1 == "AES-128-GCM" && $2 == 16384 && $3 == "decrypt" { sub(/x$/, "", $6); print $6 }' "$d/text.out")
check "speed AES-128-GCM 16 KiB decrypt: hardware/software ratio ${ratio:-none} > 1" \
    awk -v r="${ratio:-0}" 'BEGIN { exit !(r > 1) }'
check "speed: an inherited OPENSSL_ia32cap is reported as ignored" \
    grep -q 'OPENSSL_ia32cap is set in the environment; ignored' "$d/text.err"

# JSON, one AES-128-GCM and one ChaCha20 point: the shape, valid numbers, and the what-if
# taking ChaCha20's default-capability figure against software AES.
"$SP" --json --seconds 1 --ciphers aes-128-gcm,chacha20-poly1305 --sizes 1024 --dir decrypt \
    >"$d/json.out" 2>"$d/json.err"
check "speed --json: tool, arch, software_env, results with hw/sw MB/s and ratio, ChaCha20 what-if unmasked" \
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["tool"] == "tlsmeter-speed" and d["arch"] == "x86_64" and d["emulated"] is False, d
assert d["software_env"] == "OPENSSL_ia32cap=" + sys.argv[2], d["software_env"]
a, c = d["results"]
assert (a["cipher"], a["bytes"], a["direction"]) == ("AES-128-GCM", 1024, "decrypt"), a
assert (c["cipher"], c["bytes"], c["direction"]) == ("ChaCha20-Poly1305", 1024, "decrypt"), c
assert all(r["hw_MBps"] > 0 and r["sw_MBps"] > 0 and r["ratio"] > 0 for r in (a, c)), d
(w,) = d["chacha_vs_software_aes128"]
assert (w["chacha_MBps"], w["aes_sw_MBps"]) == (c["hw_MBps"], a["sw_MBps"]), w' \
    "$d/json.out" "$TLSM_IA32_SOFT_MASK"

# Bad input: an unknown cipher is n/a with exit 1; a bad option is a usage error.
"$SP" --seconds 1 --ciphers no-such-cipher --sizes 1024 --dir encrypt >"$d/bad.out" 2>"$d/bad.err"
echo $? >"$d/bad.rc"
check "speed unknown cipher: exit 1, row shows n/a" \
    test "$(cat "$d/bad.rc")" = 1 -a -n "$(grep -E '^NO-SUCH-CIPHER .* n/a +n/a +n/a$' "$d/bad.out")"
"$SP" --seconds 0 >/dev/null 2>&1
check "speed --seconds 0: usage error (exit 2)" test $? = 2

# An arm64 openssl under qemu: OPENSSL_armcap is the mask, and the numbers carry a warning.
# Uses the shared arm64 sysroot (scripts/aarch64-sysroot, cached under $O) when qemu is there.
if command -v qemu-aarch64-static >/dev/null && [ -x "$TLSM_TOP/scripts/aarch64-sysroot" ] &&
    sr=$("$TLSM_TOP/scripts/aarch64-sysroot" "$O/sysroot-aarch64" 2>"$d/sysroot.log") &&
    [ -x "$sr/usr/bin/openssl" ]; then
    "$SP" --openssl "qemu-aarch64-static -L $sr $sr/usr/bin/openssl" --seconds 1 \
        --ciphers aes-128-gcm --sizes 16384 --dir decrypt >"$d/qemu.out" 2>"$d/qemu.err"
    emulated() {
        grep -q '^WARNING: openssl runs under emulation: times under emulation are meaningless' "$1" &&
            grep -q ' on aarch64: ' "$1" && grep -q 'software: OPENSSL_armcap=0 ' "$1" &&
            grep -qE '^AES-128-GCM +16384 +decrypt +[0-9]' "$1"
    }
    check "speed under qemu: aarch64 detected, OPENSSL_armcap=0 mask, emulation warning, a row" \
        emulated "$d/qemu.out"
else
    skip "speed under qemu: no qemu-aarch64-static or no arm64 sysroot with openssl"
fi
