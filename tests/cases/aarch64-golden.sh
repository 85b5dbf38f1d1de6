#!/usr/bin/env bash
# aarch64-golden: the cross-built tlsmeter-analyze, run under qemu, turns the checked-in traces
# (tests/golden/MANIFEST) into exactly the checked-in outputs, as the x86_64 build does: the
# analysis desk may well be an arm64 machine, and a report must not depend on where it ran.
# tlsm-arch: aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
d=$(case_dir)
g=$TLSM_TOP/tests/golden
if [ ! -x "$O/tlsmeter-analyze" ]; then
    fail "aarch64-golden: $O/tlsmeter-analyze is not built"
    exit 0
fi
target_wrapper "$O/tlsmeter-analyze" "$d/analyze"
mkdir -p "$d/out"
ANALYZE=$d/analyze O=$O "$g/regen" --out "$d/out"
n=0
bad=()
while read -r out _; do
    case "$out" in '' | '#'*) continue ;; esac
    n=$((n + 1))
    for f in "$out" "$out.err"; do
        [ -e "$g/$f" ] || [ -e "$d/out/$f" ] || continue
        diff -u "$g/$f" "$d/out/$f" >>"$d/diff" 2>&1 || bad+=("$f")
    done
done <"$g/MANIFEST"
if [ ${#bad[@]} -eq 0 ] && [ "$n" -gt 0 ]; then
    pass "aarch64-golden: $n golden outputs identical from the arm64 analyzer"
    rm -rf "$d"
else
    head -n 60 "$d/diff"
    fail "aarch64-golden: ${#bad[@]} of $n outputs differ under qemu: ${bad[*]:0:8}"
fi
