#!/usr/bin/env bash
# analyze-fuzz: the trace reader under libFuzzer with ASan/UBSan for 10 s from the checked-in
# corpus of nasty inputs (tests/fuzz/corpus): zero crashes. `make fuzz` runs it longer.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
if ! command -v "${FUZZ_CC:-clang}" >/dev/null; then
    skip "analyze-fuzz: clang not installed (scripts/install-deps --extra clang)"
    exit 0
fi
d=$(case_dir)
if ! make -s -C "$TLSM_TOP" O="$O" "$O/fuzz/fuzz-reader" >"$d/build.log" 2>&1; then
    if grep -q "fuzzer" "$d/build.log"; then
        skip "analyze-fuzz: clang cannot build libFuzzer targets (libclang-rt-14-dev?)"
    else
        fail "analyze-fuzz: build failed: $(tail -n 3 "$d/build.log" | tr '\n' ' ')"
    fi
    exit 0
fi
if "$TLSM_TOP/tests/fuzz/run" "$O/fuzz/fuzz-reader" "${TLSM_FUZZ_TIME:-10}" >"$d/fuzz.log" 2>&1; then
    pass "analyze-fuzz: $(grep -o 'Done [0-9]* runs' "$d/fuzz.log"), no crash"
else
    fail "analyze-fuzz: $(grep -m1 -E 'ERROR|runtime error|deadly' "$d/fuzz.log")" \
        "(log: $d/fuzz.log)"
fi
