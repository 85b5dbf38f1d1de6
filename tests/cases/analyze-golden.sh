#!/usr/bin/env bash
# analyze-golden: checked-in traces (tests/golden/*.jsonl, format 2: *.trace) through tlsmeter-analyze must give
# exactly the checked-in outputs listed in tests/golden/MANIFEST (diff -u on a mismatch).
# After an intended change: tests/golden/regen, then review `git diff tests/golden`.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
d=$(case_dir)
g=$TLSM_TOP/tests/golden
if [ ! -x "$O/tlsmeter-analyze" ]; then
    fail "analyze-golden: $O/tlsmeter-analyze is not built"
    exit 0
fi
O=$O "$g/regen" --out "$d"
while read -r out _; do
    case "$out" in '' | '#'*) continue ;; esac
    why=
    for f in "$out" "$out.err"; do
        [ -e "$g/$f" ] || [ -e "$d/$f" ] || continue
        diff -u "$g/$f" "$d/$f" >"$d/$f.diff" 2>&1 || why="$why $(head -c 600 "$d/$f.diff")"
    done
    if [ -z "$why" ]; then
        pass "analyze-golden $out"
    else
        cat "$d"/"$out"*.diff
        fail "analyze-golden $out: differs from tests/golden/$out:$why"
    fi
done <"$g/MANIFEST"
rm -rf "$d"
