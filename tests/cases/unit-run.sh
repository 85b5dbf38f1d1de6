#!/usr/bin/env bash
# unit-run: `make unit` ends with the closing line every suite here prints ("N passed, N
# failed") and fails when a unit program fails: tests/unit/run, with a program that passes, one
# that prints a FAIL line and one that exits non-zero.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
R=$TLSM_TOP/tests/unit/run
out=$("$R" "echo PASS one; echo PASS two" 2>&1)
rc=$?
if [ "$rc" = 0 ] && [ "$(echo "$out" | tail -n 1)" = "2 passed, 0 failed" ]; then
    pass "unit-run: all passing: exit 0, closing line '2 passed, 0 failed'"
else
    fail "unit-run: all passing: exit $rc, last line '$(echo "$out" | tail -n 1)'"
fi
out=$("$R" "echo PASS one" "echo FAIL two" "exit 3" 2>&1)
rc=$?
if [ "$rc" = 1 ] && [ "$(echo "$out" | tail -n 1)" = "1 passed, 2 failed" ] &&
    echo "$out" | grep -q '^FAIL exit 3: exited non-zero'; then
    pass "unit-run: a FAIL line and a non-zero exit: exit 1, '1 passed, 2 failed', the program named"
else
    fail "unit-run: a FAIL line and a non-zero exit: exit $rc, output '$(echo "$out" | tr '\n' '|')'"
fi
if grep -q 'tests/unit/run' "$TLSM_TOP/Makefile"; then
    pass "unit-run: make unit runs its programs through tests/unit/run"
else
    fail "unit-run: the Makefile's unit target does not use tests/unit/run"
fi
