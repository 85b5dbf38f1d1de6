#!/usr/bin/env bash
# fleet-state: the --openmetrics companion's state, limits and refusals, on real summary traces
# of three programs (curl, Python, our C client):
#   - --max-programs 2: the third program counts as "(other)", and stays there after a first
#     one's traces are gone (a kept value never moves); tlsmeter_label_values says 2 of 2;
#   - a trace file replaced by another process's trace at the same path (a reused pid): the
#     first process's counts stay (retired), the new one's add;
#   - a file in the directory that is no trace: counted unreadable, named once on stderr, the
#     others counted;
#   - a symlink planted at DIR/tlsmeter.prom is replaced, its target untouched;
#   - --prune 3600: traces that ended over an hour ago are deleted once counted, their counts
#     kept; a recent one stays;
#   - a bucket read under another class than at the last update (as when an unverified
#     version's class waits for its speed band): the old class keeps what it counted, the
#     new one counts the rest, the sum is the trace's (the earlier reading is written into the
#     state: its "hardware" records of one trace renamed "unknown", 50 of them);
#   - refusals: a damaged state file (exit 4, naming file:line, the state left as it was), a
#     second companion on the same state (exit 1), --every without --textfile and --textfile
#     without --openmetrics (exit 2, one line each).
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
N=fleet-state
d=$(case_dir)
tls_init "$d"
tls_need_preload "$N"
A=$O/tlsmeter-analyze
if under_qemu; then
    skip "$N: the companion is the host's analyzer"
    exit 0
fi
tls_make_file f.bin $((1 << 20))
tls_server_start 1.3 TLS_AES_128_GCM_SHA256 || {
    fail "$N: no s_server"
    exit 0
}
TLS_ENV=(TLSMETER_EVENTS=summary)
TLS_KEEP_FORMAT=1
src=$d/src
mkdir -p "$src"
tls_client tlsget "$TLS_PORT" f.bin "$d/c1" "$src/mtclient1.%p.trace"
tls_client tlsget "$TLS_PORT" f.bin "$d/c2" "$src/mtclient2.%p.trace"
tls_client py "$TLS_PORT" f.bin "$d/py" "$src/py.%p.trace"
tls_client sclient "$TLS_PORT" f.bin "$d/sc" "$src/sclient.%p.trace"
n=$(find "$src" -name '*.trace' | wc -l)
if [ "$n" != 4 ]; then
    fail "$N: 4 traces wanted, $n made"
    exit 0
fi
mt1=$(echo "$src"/mtclient1.*) mt2=$(echo "$src"/mtclient2.*)
py=$(echo "$src"/py.*) sc=$(echo "$src"/sclient.*)
pyc=$(basename "$TLSM_PY" | cut -c1-15)
tr=$d/traces tf=$d/tf
mkdir -p "$tr" "$tf"
om() { "$A" --openmetrics --textfile "$tf" --max-programs 2 "$tr" 2>>"$d/om.err"; }
val() { # val METRIC LABELS: the value of the line METRIC{LABELS} in tlsmeter.prom
    local k=$1
    [ -n "$2" ] && k="$1{$2}"
    awk -v k="$k" 'index($0, k " ") == 1 { print $2 }' "$tf/tlsmeter.prom"
}

# Limits: mtclient and Python are kept, s_client comes third.
cp "$mt1" "$py" "$tr/"
om
cp "$sc" "$tr/"
om
check "$N: third program counts as (other)" test "$(val tlsmeter_traces_total 'program="(other)"')" = 1
check "$N: the two kept programs by name" test "$(val tlsmeter_traces_total 'program="mtclient"')$(val tlsmeter_traces_total "program=\"$pyc\"")" = 11
check "$N: tlsmeter_label_values 2 of limit 2" test "$(val tlsmeter_label_values 'label="program"') $(val tlsmeter_label_values_limit 'label="program"')" = "2 2"
rm "$tr/$(basename "$py")"
om
check "$N: a kept program's trace deleted: its counts stay, s_client still (other)" \
    test "$(val tlsmeter_traces_total "program=\"$pyc\"") $(val tlsmeter_traces_total 'program="(other)"')" = "1 1"

# A trace replaced at its path by another process's (a reused pid).
before=$(val tlsmeter_ssl_bytes_total 'program="mtclient",dir="in"')
cp "$mt2" "$tr/$(basename "$mt1")"
om
after=$(val tlsmeter_ssl_bytes_total 'program="mtclient",dir="in"')
got1=$(cat "$d/c1.got") got2=$(cat "$d/c2.got")
check "$N: a trace replaced by another process's: both counted ($before -> $after = $got1 + $got2)" \
    test "$after" = $((got1 + got2)) -a "$before" = "$got1"
check "$N: two mtclient processes" test "$(val tlsmeter_traces_total 'program="mtclient"')" = 2

# Not a trace.
echo "not a trace" >"$tr/notes.trace"
: >"$d/om.err"
om
om
check "$N: a file that is no trace: counted unreadable" test "$(val tlsmeter_trace_files_unreadable '')" = 1
check "$N: ... named on stderr once per run ($(head -c 200 "$d/om.err"))" test "$(grep -c 'notes.trace' "$d/om.err")" = 2
check "$N: ... the others still counted" test "$(val tlsmeter_traces_total 'program="mtclient"')" = 2
rm "$tr/notes.trace"

# A symlink planted at the exposition's name.
echo keep >"$d/victim"
rm -f "$tf/tlsmeter.prom"
ln -s "$d/victim" "$tf/tlsmeter.prom"
om
check "$N: a symlink at tlsmeter.prom replaced, not followed" \
    test ! -L "$tf/tlsmeter.prom" -a "$(cat "$d/victim")" = keep -a -s "$tf/tlsmeter.prom"

# --prune: the old ended traces go, their counts stay; the recent one stays.
cp "$py" "$tr/"
touch -d '2 hours ago' "$tr/$(basename "$mt1")"
om
want=$(grep '_total{' "$tf/tlsmeter.prom" | sort)
"$A" --openmetrics --textfile "$tf" --max-programs 2 --prune 3600 "$tr" 2>>"$d/om.err"
"$A" --openmetrics --textfile "$tf" --max-programs 2 --prune 3600 "$tr" 2>>"$d/om.err"
check "$N: --prune 3600: the trace that ended 2 hours ago deleted, the others kept" \
    test ! -e "$tr/$(basename "$mt1")" -a -e "$tr/$(basename "$py")" -a -e "$tr/$(basename "$sc")"
check "$N: --prune: every counter as before" test "$(grep '_total{' "$tf/tlsmeter.prom" | sort)" = "$want"

# A class that changed between two readings of a trace.
st=$tf/.tlsmeter-metrics.state
rec_sum() { grep "^tlsmeter_records_total{program=\"$pyc\",dir=\"in\"" "$tf/tlsmeter.prom" | awk '{ n += $2 } END { print n + 0 }'; }
total=$(rec_sum)
"$TLSM_PY" - "$st" "$tr/$(basename "$py")" <<'PY'
import os, sys
st, path = sys.argv[1], sys.argv[2]
out, trace = [], False
for line in open(st):
    f = line.rstrip("\n").split(" ")
    if f[0] == "trace":
        trace = f[-1][1:] == path
        if trace:
            f[3] = "0"  # its mtime: read it again
    if trace and f[:2] == ["s", "tlsmeter_records_total"] and f[4] == "=in":
        f[2], f[7] = "50", "=unknown"
    out.append(" ".join(f) + "\n")
open(st, "w").writelines(out)
PY
om
check "$N: a class changed between readings: unknown keeps 50, hardware the rest, the sum $total" \
    test "$(val tlsmeter_records_total "program=\"$pyc\",dir=\"in\",cipher=\"AES-128-GCM\",path=\"native\",class=\"unknown\",copy=\"$(sed -n 's/.*copy="\([^"]*\)".*/\1/p' "$tf/tlsmeter.prom" | head -n 1)\",version=\"$(sed -n 's/.*version="\([^"]*\)".*/\1/p' "$tf/tlsmeter.prom" | head -n 1)\"") $(rec_sum)" = "50 $total"

# Refusals.
cp "$st" "$d/state.good"
sed -i '3s/.*/program =a b c/' "$st"
cp "$st" "$d/state.bad"
"$A" --openmetrics --textfile "$tf" "$tr" >"$d/bad.out" 2>"$d/bad.err"
rc=$?
check "$N: a damaged state: exit 4 ($rc), file:line named ($(head -c 200 "$d/bad.err"))" \
    test "$rc" = 4 -a "$(grep -c "$st:3: " "$d/bad.err")" = 1
check "$N: ... the state left as it was" cmp "$st" "$d/state.bad"
cp "$d/state.good" "$st"
"$A" --openmetrics --textfile "$tf" --every 60 "$tr" 2>"$d/first.err" &
first=$!
TLS_PIDS+=("$first")
# Until the first holds the state's lock (a slow start, as under the sanitizers, must not let
# the second one in first).
for _ in $(seq 100); do
    [ -e "$st.lock" ] && ! flock -n "$st.lock" true && break
    sleep 0.1
done
"$A" --openmetrics --textfile "$tf" "$tr" >/dev/null 2>"$d/second.err"
rc=$?
check "$N: a second companion on the same state: exit 1 ($rc; $(head -c 200 "$d/second.err"))" \
    test "$rc" = 1 -a "$(grep -c 'another tlsmeter-analyze --openmetrics uses it' "$d/second.err")" = 1
tls_stop_pid "$first"
for args in "--openmetrics --every 5" "--openmetrics --prune 60" "--textfile $tf"; do
    # shellcheck disable=SC2086 # the options are words
    "$A" $args "$tr" >/dev/null 2>"$d/usage.err"
    rc=$?
    check "$N: $args: exit 2 ($rc), one line saying why ($(head -n 1 "$d/usage.err"))" \
        test "$rc" = 2 -a "$(grep -c '^tlsmeter-analyze: ' "$d/usage.err")" = 1
done
