#!/usr/bin/env bash
# unit-preload: parts of the preload tested directly, linked into small programs (no LD_PRELOAD):
# the JSON line writer; the perf-clock reading of cputime.h.
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
d=$(case_dir)
cc=${CC:-cc}
[ "${TLSM_ARCH:-x86_64}" = aarch64 ] && cc="aarch64-linux-gnu-gcc --sysroot=$TLSM_SYSROOT"
san=()
[ -n "${TLSM_SAN:-}" ] && san=(-fsanitize="$TLSM_SAN" -fno-sanitize-recover=all)
if ! $cc -std=gnu11 -O2 -Wall -Wextra "${san[@]}" -I"$TLSM_TOP/preload" -o "$d/json" \
    "$TLSM_TOP/tests/unit/json.c" "$TLSM_TOP/preload/json.c" 2>"$d/cc.err"; then
    fail "unit json: does not build: $(head -c 300 "$d/cc.err")"
    exit 0
fi
out=$(run_target "$d/json" 2>&1)
rc=$?
echo "$out" | grep -E '^(PASS|FAIL)' | tee -a "$TLSM_RESULTS"
[ "$rc" = 0 ] || echo "$out" | grep -q '^FAIL' || fail "unit json: exit $rc: $(echo "$out" | tail -n 3)"

# The perf-clock reading of cputime.h on synthetic task-clock pages (issue 11).
if ! $cc -std=gnu11 -O2 -Wall -Wextra -D_GNU_SOURCE "${san[@]}" -I"$TLSM_TOP/preload" \
    -o "$d/cputime" "$TLSM_TOP/tests/unit/cputime.c" "$TLSM_TOP/preload/clock.c" 2>"$d/cc2.err"; then
    fail "unit cputime: does not build: $(head -c 300 "$d/cc2.err")"
    exit 0
fi
out=$(run_target "$d/cputime" 2>&1)
rc=$?
echo "$out" | grep -E '^(PASS|FAIL)' | tee -a "$TLSM_RESULTS"
[ "$rc" = 0 ] || echo "$out" | grep -q '^FAIL' || fail "unit cputime: exit $rc: $(echo "$out" | tail -n 3)"
