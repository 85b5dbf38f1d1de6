#!/usr/bin/env bash
# help-texts: the --help of tlsmeter and tlsmeter-analyze say what the traces really are: the
# binary format by default (TLSMETER_FORMAT=jsonl for JSON Lines), not "JSON Lines" alone.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
for t in "tlsmeter:$TLSM_TOP/scripts/tlsmeter" "tlsmeter-analyze:$O/tlsmeter-analyze"; do
    name=${t%%:*} prog=${t#*:}
    if [ ! -x "$prog" ]; then
        fail "help-texts $name: $prog not built; run make"
        continue
    fi
    text=$("$prog" --help 2>&1 | tr -s ' \n' '  ')
    if [[ $text == *"binary format"* && $text == *"JSON Lines"* ]]; then
        pass "help-texts $name --help: names the binary default and JSON Lines"
    else
        fail "help-texts $name --help does not say traces are binary by default: $(echo "$text" | head -c 300)"
    fi
done
