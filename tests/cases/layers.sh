#!/usr/bin/env bash
# layers: the folders of preload/ and analyzer/ are layers and every include points down
# (preload: arch < base < trace < forward < core < reroute < hooks < main.c; analyzer: base <
# model < input < verdicts < output < main.c), includes name their folder, and no C file is
# over 600 lines (docs/design.md, "Layers"). tests/tools/layers.py does the reading; this
# case also proves the checker fails on an upward include, in a scratch copy.
# tlsm-arch: x86_64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
d=$(case_dir)
TOOL=$TLSM_TOP/tests/tools/layers.py

if out=$(python3 "$TOOL" "$TLSM_TOP" 2>&1); then
    pass "layers: $(echo "$out" | tr '\n' ';' | sed 's/;$//')"
else
    fail "layers: $(echo "$out" | head -n 5 | tr '\n' ';')"
fi

# The checker itself: a core file including a hooks header must be caught, and a bare include.
mkdir -p "$d/t"
cp -r "$TLSM_TOP/preload" "$TLSM_TOP/analyzer" "$d/t/"
printf '#include "hooks/hook.h"\n' >>"$d/t/preload/core/recsm.c"
printf '#include "json.h"\n' >>"$d/t/preload/base/table.c"
out=$(python3 "$TOOL" "$d/t" 2>&1)
rc=$?
if [ "$rc" != 0 ] && echo "$out" | grep -q 'core/recsm.c:.*"hooks/hook.h" points up' &&
    echo "$out" | grep -q 'base/table.c:.*"json.h" does not name a layer'; then
    pass "layers: an upward include and a bare include are caught"
else
    fail "layers: the checker missed a planted violation (rc $rc): $(echo "$out" | head -n 3)"
fi
