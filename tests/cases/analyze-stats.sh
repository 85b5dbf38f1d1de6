#!/usr/bin/env bash
# analyze-stats: per-record ns/B by size class (mean, median, p90), switched-out records left
# out and estimated, CPU shares clamped with the undercount said, gains only from bulk records.
# Generated traces of known shape (tests/tools/stats_trace.py) and one real traced download;
# every figure is recomputed here from the trace's own lines, never hard-coded.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
A=$O/tlsmeter-analyze
ST="$TLSM_PY $TLSM_TOOLS/stats_trace.py"
if [ ! -x "$A" ]; then
    fail "analyze-stats: $A is not built"
    exit 0
fi
tls_init "$d"

# jq_py FILE EXPR: print a Python expression over the JSON in FILE (as d).
jq_py() {
    "$TLSM_PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
v = [x for x in d["verdicts"]]
def ev(i, k):
    return [x["evidence"].get(k) for x in v if x["id"] == i]
print(eval(sys.argv[2]))' "$1" "$2"
}

# near A B REL: |A - B| <= REL * max(|A|, |B|)
near() {
    "$TLSM_PY" -c 'import sys
a, b, r = map(float, sys.argv[1:])
sys.exit(0 if abs(a - b) <= r * max(abs(a), abs(b)) + 1e-12 else 1)' "$1" "$2" "$3"
}

# Every scenario: the analyzer's size classes, left-out counts, crypto estimate and CPU share
# agree with the independent computation from the trace.
for s in switch perfclock wall undercount tiny-hw bulk-soft few-bulk; do
    $ST gen "$s" "$d/$s.jsonl"
    "$A" --json "$d/$s.jsonl" >"$d/$s.json" 2>"$d/$s.json.err"
    # --verbose: the time-per-record line is in the default report only when it says
    # something (records preempted, or no on-CPU clock); here every method's wording is read.
    "$A" --verbose "$d/$s.jsonl" >"$d/$s.txt" 2>"$d/$s.txt.err"
    tls_check "analyze-stats $s: per-class mean/median/p90 and crypto estimate match the trace" \
        $ST check "$d/$s.jsonl" "$d/$s.json"
done

# Switched out (perf-switch): counted in the report, left out of ns/B, and preemption does not
# make a class-mismatch out of an inflated mean.
n_pre=$(grep -c '"preempt":[1-9]' "$d/switch.jsonl")
n_rec=$(grep -c '"ev":"rec"' "$d/switch.jsonl")
if [ "$n_pre" -gt 0 ] &&
    grep -qF "time per record: wall time; $n_pre of $n_rec records preempted (found by the kernel's context-switch counts), estimated at their group's ns/B and left out of the ns/B figures" \
        "$d/switch.txt"; then
    pass "analyze-stats switch: $n_pre of $n_rec switched-out records said in the report"
else
    fail "analyze-stats switch: want ($n_pre of $n_rec): $(grep 'time per record' "$d/switch.txt")"
fi
mean_all=$($ST expect "$d/switch.jsonl" mean-nspb-all:AES-128-GCM)
if [ "$(jq_py "$d/switch.json" 'sum(x["id"] == "class-mismatch" for x in v)')" = 0 ] &&
    ! near "$mean_all" "$($ST expect "$d/switch.jsonl" bulk-median:AES-128-GCM)" 0.5; then
    pass "analyze-stats switch: no class-mismatch although the mean ($mean_all ns/B) is inflated"
else
    fail "analyze-stats switch: class-mismatch fired (or the trace does not inflate the mean)"
fi
grep -qF "time per record: on-CPU time (perf task clock)" "$d/perfclock.txt" &&
    [ "$(jq_py "$d/perfclock.json" 'd["records_left_out"]')" = 0 ] &&
    pass "analyze-stats perfclock: on-CPU, nothing left out" ||
    fail "analyze-stats perfclock: $(grep 'time per record' "$d/perfclock.txt")"
grep -qF "time per record: wall time, not checked for preemption" "$d/wall.txt" &&
    pass "analyze-stats wall: says crypto time is not corrected" ||
    fail "analyze-stats wall: $(grep 'time per record' "$d/wall.txt")"

# Undercount: crypto above the process CPU: share 100 %, the bound said (computed here).
short=$("$TLSM_PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
e = [json.loads(l) for l in open(sys.argv[2]) if "\"end\"" in l][0]
print(d["crypto_ns"] - e["user_ns"] - e["sys_ns"])' "$d/undercount.json" "$d/undercount.jsonl")
if [ "$(jq_py "$d/undercount.json" 'd["crypto_share_cpu"]')" = 1.0 ] &&
    [ "$(jq_py "$d/undercount.json" 'd["crypto_share_wall"]')" = 1.0 ] &&
    [ "$(jq_py "$d/undercount.json" 'd["cpu_undercount_ns"]')" = "$short" ] &&
    near "$(jq_py "$d/undercount.json" 'ev("cpu-undercount", "undercount_ns")[0]')" "$short" 1e-5 &&
    grep -q "crypto >= 100 % of the CPU the kernel accounted: process CPU undercounted by at least" \
        "$d/undercount.txt"; then
    pass "analyze-stats undercount: shares clamped at 100 %, undercount of $short ns said"
else
    fail "analyze-stats undercount: $(grep -A2 'time per record' "$d/undercount.txt" | tr '\n' ' ')"
fi

# Tiny records on hardware AES (mosquitto_pub's shape, with calibrations in the trace): no
# gain figure from tiny records, and no software-aes verdict once the class is hardware.
cls=$(jq_py "$d/tiny-hw.json" 'd["ciphers"][0]["impl"]')
if [ "$(jq_py "$d/tiny-hw.json" 'all(x is None for x in ev("software-aes", "expected_gain") + ev("chacha-what-if", "gain"))')" = True ] &&
    ! grep -q "expected gain\|would cost" "$d/tiny-hw.txt" &&
    { [ "$cls" != hardware ] || ! grep -q '\[software-aes\]' "$d/tiny-hw.txt"; }; then
    pass "analyze-stats tiny-hw: no gain from tiny records (class $cls)"
else
    fail "analyze-stats tiny-hw: $(grep -A3 '^verdicts' "$d/tiny-hw.txt" | tr '\n' ' ')"
fi

# Table AES with bulk and tiny records: the gain is the bulk median over the calibration.
med=$($ST expect "$d/bulk-soft.jsonl" bulk-median:AES-128-GCM)
mean_all=$($ST expect "$d/bulk-soft.jsonl" mean-nspb-all:AES-128-GCM)
gain=$(jq_py "$d/bulk-soft.json" 'ev("software-aes", "expected_gain")[0]')
hw=$(jq_py "$d/bulk-soft.json" 'ev("software-aes", "hw_ns_per_byte")[0]')
cgain=$(jq_py "$d/bulk-soft.json" 'ev("chacha-what-if", "gain")[0]')
cref=$(jq_py "$d/bulk-soft.json" 'ev("chacha-what-if", "chacha_ns_per_byte")[0]')
calib_hw=$(grep '"calib"' "$d/bulk-soft.jsonl" | grep AES-128 | sed 's/.*"ns_per_byte":\([0-9.]*\).*/\1/')
if near "$hw" "$calib_hw" 1e-6 && near "$gain" "$("$TLSM_PY" -c "print($med / $hw)")" 0.012 &&
    near "$cgain" "$("$TLSM_PY" -c "print($med / $cref)")" 0.012 &&
    ! near "$gain" "$("$TLSM_PY" -c "print($mean_all / $hw)")" 0.05; then
    pass "analyze-stats bulk-soft: gain $gain = bulk median $med / $hw (not the mean over all records)"
else
    fail "analyze-stats bulk-soft: gain $gain, chacha $cgain; bulk median $med, hw $hw, all-record mean $mean_all"
fi
if [ "$(jq_py "$d/few-bulk.json" 'ev("software-aes", "expected_gain")')" = "[None]" ] &&
    grep -q "no gain figure: fewer than 16 bulk records" "$d/few-bulk.txt"; then
    pass "analyze-stats few-bulk: 10 bulk records give no gain figure"
else
    fail "analyze-stats few-bulk: $(grep -A2 '^verdicts' "$d/few-bulk.txt" | tr '\n' ' ')"
fi

# Hostile numbers (crypto_ns and wall near 2^62, 40 threads, pt 2^40): exit 0, shares <= 1.
$ST gen huge "$d/huge.jsonl"
if "$A" --json "$d/huge.jsonl" >"$d/huge.json" 2>"$d/huge.err" &&
    [ "$(jq_py "$d/huge.json" 'd["crypto_share_cpu"] <= 1 and d["crypto_share_wall"] <= 1')" = True ]; then
    pass "analyze-stats huge: saturating sums, shares <= 1"
else
    fail "analyze-stats huge: $(tail -n 3 "$d/huge.err")"
fi

# A real traced download: the analyzer's bulk median ns/B (and every class figure) equals
# what the trace's records give.
if ! tls_client_ok "$TLS_DL"; then
    skip "analyze-stats real download: $TLS_CLIENT_SKIP"
    exit 0
fi
tls_make_file big.bin 8388608
tls_server_start 1.3 TLS_AES_128_GCM_SHA256 || {
    fail "analyze-stats real download: no s_server"
    exit 0
}
tls_client "$TLS_DL" "$TLS_PORT" big.bin "$d/real" "$d/real.%p.jsonl"
tls_server_stop
tls_traces "$d/real.*.jsonl"
if [ "${#TRACES[@]}" -ne 1 ] || [ "$(cat "$d/real.rc")" != 0 ]; then
    fail "analyze-stats real download: rc $(cat "$d/real.rc"), traces: ${TRACES[*]}"
    exit 0
fi
"$A" --json "${TRACES[0]}" >"$d/real.json" 2>"$d/real.json.err"
tls_check "analyze-stats real download: class figures match the trace's records" \
    $ST check "${TRACES[0]}" "$d/real.json"
med=$($ST expect "${TRACES[0]}" bulk-median:AES-128-GCM)
got=$(jq_py "$d/real.json" '[c["bulk"]["median"] for c in d["record_ns_per_byte"] if c["cipher"] == "AES-128-GCM"][0]')
nb=$(jq_py "$d/real.json" '[c["bulk"]["in_ns_per_byte"] for c in d["record_ns_per_byte"] if c["cipher"] == "AES-128-GCM"][0]')
if [ "$nb" -ge 400 ] && near "$got" "$med" 0.012; then
    pass "analyze-stats real download: bulk median $got ns/B over $nb records (trace: $med)"
else
    fail "analyze-stats real download: bulk median $got over $nb records, trace gives $med"
fi
