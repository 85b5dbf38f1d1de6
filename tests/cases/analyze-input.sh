#!/usr/bin/env bash
# analyze-input: input discipline of tlsmeter-analyze: exit codes, malformed lines reported
# with file, line and reason, a cut-short trace, an over-long line, stdin, the fast scanner and
# jansson agreeing on a reformatted trace, merging several files, -o.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
d=$(case_dir)
A=$O/tlsmeter-analyze
g=$TLSM_TOP/tests/golden
if [ ! -x "$A" ]; then
    fail "analyze-input: $A is not built"
    exit 0
fi

expect_rc() { # NAME RC CMD...
    local name=$1 want=$2 rc
    shift 2
    "$@" >"$d/out" 2>"$d/err"
    rc=$?
    if [ "$rc" -eq "$want" ]; then
        pass "analyze-input $name (exit $rc)"
    else
        fail "analyze-input $name: exit $rc, want $want: $(head -c 300 "$d/err")"
    fi
}

expect_rc ok 0 "$A" "$g/soft-table.jsonl"
expect_rc usage-no-file 2 "$A"
expect_rc usage-bad-option 2 "$A" --bogus "$g/hw.jsonl"
expect_rc missing-file 1 "$A" "$d/does-not-exist.jsonl"
expect_rc not-a-trace 4 "$A" "$g/hw.jsonl" "$g/not-a-trace.jsonl"
expect_rc newer-format 4 "$A" "$g/newer-format.jsonl"
expect_rc no-events 3 "$A" "$g/header-only.jsonl"
expect_rc empty 3 "$A" "$g/empty.jsonl"
expect_rc help 0 "$A" --help
grep -q "^  3  no rec or read event" "$d/out" && pass "analyze-input help documents exit codes" ||
    fail "analyze-input help: exit codes not documented"

# A usage error says what was wrong in one line, then where the help is: exit 2, two lines on
# stderr. These printed the whole 40-line help without naming the mistake (a --compare of one
# trace, a --weight or --direction value the option does not take, no trace at all, --vs
# without --compare), so the user had to guess which option was wrong.
expect_usage() { # NAME WANT ARGS...: WANT is the text after "tlsmeter-analyze: "
    local name=$1 want=$2 rc
    shift 2
    "$A" "$@" >"$d/out" 2>"$d/err"
    rc=$?
    if [ "$rc" -eq 2 ] && [ "$(wc -l <"$d/err")" -eq 2 ] && [ ! -s "$d/out" ] &&
        [ "$(head -n 1 "$d/err")" = "tlsmeter-analyze: $want" ] &&
        [ "$(tail -n 1 "$d/err")" = "Try 'tlsmeter-analyze --help'." ]; then
        pass "analyze-input usage error $name: $want"
    else
        fail "analyze-input usage error $name: exit $rc, want 2 and '$want': $(head -c 300 "$d/err")"
    fi
}
expect_usage compare-one "--compare needs two traces, or groups split by --vs (got 1 trace)" \
    --compare "$g/hw.jsonl"
expect_usage weight "--weight takes ns or bytes, not 'foo'" --weight foo "$g/hw.jsonl"
expect_usage direction "--direction takes in or out, not 'sideways'" --direction sideways \
    "$g/hw.jsonl"
expect_usage no-trace "no trace given (a file, or '-' for stdin)"
expect_usage vs-alone "--vs goes with --compare (it starts group B)" "$g/hw.jsonl" --vs "$g/hw.jsonl"
expect_usage vs-empty "--compare A... --vs B...: the group after --vs has no trace" \
    --compare "$g/hw.jsonl" --vs
expect_usage compare-folded "--compare writes the text report or --json only" --compare --folded \
    "$g/hw.jsonl" "$g/soft-table.jsonl"
expect_usage unknown-option "unrecognized option '--bogus'" --bogus "$g/hw.jsonl"
expect_usage missing-value "option '--weight' requires an argument" "$g/hw.jsonl" --weight
expect_usage sysroot "--sysroot $d/none: not a directory" --sysroot "$d/none" "$g/hw.jsonl"

# A directory given as a trace said only "read error" (it opens; its read fails): say what it
# is, exit 1 (a file that could not be read).
expect_rc directory 1 "$A" "$d"
if [ "$(cat "$d/err")" = "$d: is a directory, not a trace file" ]; then
    pass "analyze-input directory named as one"
else
    fail "analyze-input directory: $(head -c 300 "$d/err")"
fi
# A binary file that is neither format (an executable, a gzip'd trace) was reported at a
# made-up line ("/bin/ls:31: ... the first line is not JSON": NUL runs read as the mapped
# writer's padding, the first "line" 31 newlines in). Say so without a line number, with the
# bytes it starts with.
gzip -c "$g/hw.jsonl" >"$d/hw.jsonl.gz"
for bin in "$A:7f 45 4c 46 " "$d/hw.jsonl.gz:1f 8b "; do
    f=${bin%%:*} want=${bin#*:}
    expect_rc "binary $(basename "$f")" 4 "$A" "$f"
    if grep -qF "$f: not a tlsmeter trace (neither the binary trace format nor JSON Lines: it starts with bytes $want" "$d/err" &&
        ! grep -q ":[0-9][0-9]*: " "$d/err"; then
        pass "analyze-input binary $(basename "$f"): said with its first bytes, no line number"
    else
        fail "analyze-input binary $(basename "$f"): $(head -c 300 "$d/err")"
    fi
done

# A malformed line: warning with file, line number and jansson's reason; counted, skipped.
head -n 20 "$g/soft-table.jsonl" >"$d/bad.jsonl"
echo '{"ev":"rec","len":16401,,}' >>"$d/bad.jsonl"
echo '{"ev":"read","got":"lots"}' >>"$d/bad.jsonl"
sed -n '21,40p' "$g/soft-table.jsonl" >>"$d/bad.jsonl"
"$A" --json "$d/bad.jsonl" >"$d/bad.json" 2>"$d/bad.err"
if grep -q "bad.jsonl:21: skipped: .*column" "$d/bad.err" &&
    grep -q 'bad.jsonl:22: skipped: key "got" must be an integer' "$d/bad.err" &&
    grep -q '"lines_skipped": 2' "$d/bad.json"; then
    pass "analyze-input malformed lines reported and counted"
else
    fail "analyze-input malformed: $(cat "$d/bad.err") $(grep lines_skipped "$d/bad.json")"
fi

# Garbage after NUL bytes in a real trace: a malformed line (skipped, counted, warned about).
# It was dropped unseen, taken for the zeroed space of the mapped writer; only NUL runs alone
# (line 22), and beside them pieces of JSON lines a death cut (line 23, the tail of a line
# whose start was never copied), are that.
{
    head -n 20 "$g/real-soft.jsonl"
    printf '\000\377\376 garbage\n'
    printf '\000\000\000\000\n'
    printf '\000\000\000,"t":1}\n'
    sed -n '21,$p' "$g/real-soft.jsonl"
} >"$d/nul.jsonl"
"$A" --json "$d/nul.jsonl" >"$d/nul.json" 2>"$d/nul.err"
"$A" "$d/nul.jsonl" >"$d/nul.txt" 2>/dev/null
"$A" --json "$g/real-soft.jsonl" >"$d/soft.json" 2>/dev/null
if grep -q "nul.jsonl:21: skipped: NUL bytes beside bytes that are no part of a JSON line" "$d/nul.err" &&
    [ "$(grep -c skipped "$d/nul.err")" -eq 1 ] && grep -q '"lines_skipped": 1' "$d/nul.json" &&
    grep -q '^input .*, 1 skipped' "$d/nul.txt" &&
    [ "$(grep '"records"' "$d/nul.json" | head -1)" = "$(grep '"records"' "$d/soft.json" | head -1)" ]; then
    pass "analyze-input garbage after NUL bytes is a skipped line; NUL runs are not"
else
    fail "analyze-input garbage after NUL: $(head -c 300 "$d/nul.err") $(grep -E 'lines_skipped|^input' "$d/nul.json" "$d/nul.txt")"
fi

# A trace cut mid-line (kill -9): reported as truncation, not as a malformed line.
head -c 20000 "$g/soft-table.jsonl" >"$d/cut.jsonl"
"$A" --json "$d/cut.jsonl" >"$d/cut.json" 2>"$d/cut.err"
if grep -q "last line is incomplete" "$d/cut.err" && grep -q '"truncated": true' "$d/cut.json" &&
    grep -q '"lines_skipped": 0' "$d/cut.json"; then
    pass "analyze-input truncated last line"
else
    fail "analyze-input truncated: $(cat "$d/cut.err")"
fi

# A line over 1 MiB is skipped with a reason; the lines after it still count.
{
    head -n 10 "$g/hw.jsonl"
    printf '{"ev":"rec","pad":"%s"}\n' "$(head -c 1200000 /dev/zero | tr '\0' x)"
    sed -n '11,$p' "$g/hw.jsonl"
} >"$d/long.jsonl"
"$A" --json "$d/long.jsonl" >"$d/long.json" 2>"$d/long.err"
"$A" --json "$g/hw.jsonl" >"$d/hw.json" 2>/dev/null
if grep -q "long.jsonl:11: skipped: line longer than 1 MiB" "$d/long.err" &&
    [ "$(grep '"records"' "$d/long.json" | head -1)" = "$(grep '"records"' "$d/hw.json" | head -1)" ]; then
    pass "analyze-input over-long line skipped"
else
    fail "analyze-input over-long line: $(cat "$d/long.err")"
fi

# stdin, and the same trace reformatted (spaces, key order, escapes: the jansson path) must
# give the same summary as the compact one (the fast path).
python3 - "$g/soft-table.jsonl" >"$d/pretty.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    print(json.dumps(dict(reversed(list(o.items()))), ensure_ascii=True, indent=None).replace('"AES', '"\\u0041ES'))
PY
"$A" --json - <"$g/soft-table.jsonl" | sed 's/"-"/"X"/' | grep -v '"file"' >"$d/a.json"
"$A" --json "$d/pretty.jsonl" | grep -v '"file"' >"$d/b.json"
if diff -u "$d/a.json" "$d/b.json" >"$d/ab.diff"; then
    pass "analyze-input fast scanner and jansson agree"
else
    fail "analyze-input scanner vs jansson: $(head -c 500 "$d/ab.diff")"
fi

# Several files merge; -o writes the output file.
"$A" --json -o "$d/fleet.json" "$g/soft-table.jsonl" "$g/hw.jsonl" "$g/shaped.jsonl"
python3 - "$d/fleet.json" <<'PY' && pass "analyze-input fleet merge and -o" || fail "analyze-input fleet merge"
import json, sys
o = json.load(open(sys.argv[1]))
assert len(o["traces"]) == 3, o["traces"]
assert o["records"] == 69 + 69 + 37, o["records"]
for k in ("bytes_read", "reads", "records", "crypto_ns", "crypto_ns_per_byte", "impl", "paths",
          "verdicts", "lines_skipped"):
    assert k in o, k
assert all("id" in v and "text" in v for v in o["verdicts"])
PY

# Chrome output is valid JSON with slices on per-thread tracks; folded lines are "frames weight".
"$A" --chrome "$g/threads.jsonl" "$g/hw.jsonl" >"$d/t.json"
python3 - "$d/t.json" <<'PY' && pass "analyze-input chrome JSON" || fail "analyze-input chrome JSON"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
x = [e for e in ev if e["ph"] == "X"]
assert {e["cat"] for e in x} == {"read", "record"}
assert len({(e["pid"], e["tid"]) for e in x}) >= 2
PY
"$A" --folded "$g/threads.jsonl" >"$d/t.folded"
if [ -s "$d/t.folded" ] && ! grep -vqE '^[^ ;]+( [0-9]+)?(;[^;]+)+ [0-9]+$' "$d/t.folded"; then
    pass "analyze-input folded format"
else
    fail "analyze-input folded: $(head -3 "$d/t.folded")"
fi
rm -rf "$d"
