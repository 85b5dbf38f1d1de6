#!/usr/bin/env bash
# unit-entry: the entry-patching trampolines (preload/forward/entry.c and
# preload/arch/ARCH/entry.c) linked into a small program with hand-written prologues
# (tests/unit/entry.c): push/mov, a conditional branch, a PC-relative operand, a leading
# endbr64 or BTI, a call among the moved instructions, and one the relocator must refuse.
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
d=$(case_dir)
arch=${TLSM_ARCH:-x86_64}
cc=${CC:-cc}
[ "$arch" = aarch64 ] && cc="aarch64-linux-gnu-gcc --sysroot=$TLSM_SYSROOT"
san=()
[ -n "${TLSM_SAN:-}" ] && san=(-fsanitize="$TLSM_SAN" -fno-sanitize-recover=all)
if ! $cc -std=gnu11 -O2 -Wall -Wextra -D_GNU_SOURCE "${san[@]}" -I"$TLSM_TOP/preload" \
    -o "$d/entry" "$TLSM_TOP/tests/unit/entry.c" "$TLSM_TOP/preload/forward/entry.c" \
    "$TLSM_TOP/preload/arch/$arch/entry.c" 2>"$d/cc.err"; then
    fail "unit entry: does not build: $(head -c 300 "$d/cc.err")"
    exit 0
fi
out=$(run_target "$d/entry" 2>&1)
rc=$?
echo "$out" | grep -E '^(PASS|FAIL)' | tee -a "$TLSM_RESULTS"
[ "$rc" = 0 ] || echo "$out" | grep -q '^FAIL' || fail "unit entry: exit $rc: $(echo "$out" | tail -n 3)"
[ "$(echo "$out" | grep -c '^PASS')" = 6 ] || echo "$out" | grep -q '^FAIL' ||
    fail "unit entry: $(echo "$out" | grep -c '^PASS') of 6 checks ran: $(echo "$out" | tail -n 3)"
rm -rf "$d"
