#!/usr/bin/env bash
# unit-preload: parts of the preload tested directly, linked into small programs (no LD_PRELOAD):
# the JSON line writer; the perf-clock reading of cputime.h; the record state machine (recsm.c)
# replaying recorded OpenSSL 3.0 and 1.1.1 EVP sequences (tests/unit/evp) and hand-written ones;
# the OpenSSL ABI decision (forward/abi.c) and its loaders; the handshake parts object
# (core/hs.c); trace format 2's encoder against the analyzer's --jsonl (tests/unit/trace2.c).
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
d=$(case_dir)
cc=${CC:-cc}
[ "${TLSM_ARCH:-x86_64}" = aarch64 ] && cc="aarch64-linux-gnu-gcc --sysroot=$TLSM_SYSROOT"
san=()
[ -n "${TLSM_SAN:-}" ] && san=(-fsanitize="$TLSM_SAN" -fno-sanitize-recover=all)
if ! $cc -std=gnu11 -O2 -Wall -Wextra "${san[@]}" -I"$TLSM_TOP" -I"$TLSM_TOP/preload" -o "$d/json" \
    "$TLSM_TOP/tests/unit/json.c" "$TLSM_TOP/preload/base/json.c" 2>"$d/cc.err"; then
    fail "unit json: does not build: $(head -c 300 "$d/cc.err")"
    exit 0
fi
out=$(run_target "$d/json" 2>&1)
rc=$?
echo "$out" | grep -E '^(PASS|FAIL)' | tee -a "$TLSM_RESULTS"
[ "$rc" = 0 ] || echo "$out" | grep -q '^FAIL' || fail "unit json: exit $rc: $(echo "$out" | tail -n 3)"

# The perf-clock reading of cputime.h on synthetic task-clock pages.
if ! $cc -std=gnu11 -O2 -Wall -Wextra -D_GNU_SOURCE "${san[@]}" -I"$TLSM_TOP/preload" \
    -o "$d/cputime" "$TLSM_TOP/tests/unit/cputime.c" "$TLSM_TOP/preload/base/clock.c" \
    "$TLSM_TOP/preload/arch/${TLSM_ARCH:-x86_64}/cpu.c" 2>"$d/cc2.err"; then
    fail "unit cputime: does not build: $(head -c 300 "$d/cc2.err")"
    exit 0
fi
out=$(run_target "$d/cputime" 2>&1)
rc=$?
echo "$out" | grep -E '^(PASS|FAIL)' | tee -a "$TLSM_RESULTS"
[ "$rc" = 0 ] || echo "$out" | grep -q '^FAIL' || fail "unit cputime: exit $rc: $(echo "$out" | tail -n 3)"

# The record state machine on its own: recsm.c and nothing else links.
if ! $cc -std=gnu11 -O2 -Wall -Wextra -Wno-unused-parameter "${san[@]}" -I"$TLSM_TOP/preload" \
    -o "$d/recsm" "$TLSM_TOP/tests/unit/recsm.c" "$TLSM_TOP/preload/core/recsm.c" 2>"$d/cc3.err"; then
    fail "unit recsm: does not build: $(head -c 300 "$d/cc3.err")"
    exit 0
fi
out=$(run_target "$d/recsm" "$TLSM_TOP/tests/unit/evp" 2>&1)
rc=$?
echo "$out" | grep -E '^(PASS|FAIL)' | tee -a "$TLSM_RESULTS"
[ "$rc" = 0 ] || echo "$out" | grep -q '^FAIL' || fail "unit recsm: exit $rc: $(echo "$out" | tail -n 3)"
echo "$out" | grep -q '^PASS recsm write inside a read' || fail "unit recsm: the hand-written cases did not run"

# The OpenSSL ABI decision and its two loaders on made-up objects, 1.1.1's capability words
# under masks (preload/forward/abi*.c, preload/arch/ARCH/ossl111caps.c).
arch=${TLSM_ARCH:-x86_64}
if ! $cc -std=gnu11 -O2 -Wall -Wextra -Wno-unused-parameter -D_GNU_SOURCE "${san[@]}" \
    -I"$TLSM_TOP" -I"$TLSM_TOP/preload" -o "$d/abi" "$TLSM_TOP/tests/unit/abi.c" \
    "$TLSM_TOP"/preload/forward/abi{,_ossl3,_ossl111}.c "$TLSM_TOP/preload/arch/$arch/ossl111caps.c" \
    "$TLSM_TOP/preload/base/caps.c" "$TLSM_TOP/preload/base/json.c" \
    "$TLSM_TOP/preload/arch/$arch/cpu.c" 2>"$d/cc4.err"; then
    fail "unit abi: does not build: $(head -c 300 "$d/cc4.err")"
    exit 0
fi
out=$(run_target "$d/abi" 2>&1)
rc=$?
echo "$out" | grep -E '^(PASS|FAIL)' | tee -a "$TLSM_RESULTS"
[ "$rc" = 0 ] || echo "$out" | grep -q '^FAIL' || fail "unit abi: exit $rc: $(echo "$out" | tail -n 3)"
# The conn open event's hs object: core/hs.c with the JSON builder's digits.
if ! $cc -std=gnu11 -O2 -Wall -Wextra -D_GNU_SOURCE "${san[@]}" -I"$TLSM_TOP" -I"$TLSM_TOP/preload" -o "$d/hs" \
    "$TLSM_TOP/tests/unit/hs.c" "$TLSM_TOP/preload/core/hs.c" "$TLSM_TOP/preload/base/json.c" \
    2>"$d/cc4.err"; then
    fail "unit hs: does not build: $(head -c 300 "$d/cc4.err")"
    exit 0
fi
out=$(run_target "$d/hs" 2>&1)
rc=$?
echo "$out" | grep -E '^(PASS|FAIL)' | tee -a "$TLSM_RESULTS"
[ "$rc" = 0 ] || echo "$out" | grep -q '^FAIL' || fail "unit hs: exit $rc: $(echo "$out" | tail -n 3)"
# Trace format 2's encoder (preload/trace/trace2.c) under the JSON builder: each event staged
# and encoded, and built as text; tlsmeter-analyze --jsonl of the binary must give the text.
if ! $cc -std=gnu11 -O2 -Wall -Wextra -D_GNU_SOURCE "${san[@]}" -I"$TLSM_TOP/preload" \
    -I"$TLSM_TOP" -o "$d/trace2" "$TLSM_TOP/tests/unit/trace2.c" "$TLSM_TOP/preload/base/json.c" \
    "$TLSM_TOP/preload/trace/trace2.c" 2>"$d/cc5.err"; then
    fail "unit trace2: does not build: $(head -c 300 "$d/cc5.err")"
    exit 0
fi
out=$(run_target "$d/trace2" "$d" 2>&1)
rc=$?
echo "$out" | grep -E '^(PASS|FAIL)' | tee -a "$TLSM_RESULTS"
[ "$rc" = 0 ] || echo "$out" | grep -q '^FAIL' || fail "unit trace2: exit $rc: $(echo "$out" | tail -n 3)"
if [ -x "$O/tlsmeter-analyze" ]; then
    run_target "$O/tlsmeter-analyze" --jsonl "$d/u.trace" >"$d/u.got.jsonl" 2>"$d/u.err"
    check "unit trace2: --jsonl of the encoded events gives the events built as JSON" \
        python3 -c 'import json, sys
got = [json.loads(l) for l in open(sys.argv[1])]
want = [json.loads(l) for l in open(sys.argv[2])]
assert len(got) == len(want), (len(got), len(want))
for g, w in zip(got, want):
    assert g == w, "got %s, want %s" % (g, w)' "$d/u.got.jsonl" "$d/u.expect.jsonl"
else
    skip "unit trace2 --jsonl: $O/tlsmeter-analyze not built"
fi
