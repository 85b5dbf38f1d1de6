#!/usr/bin/env bash
# analyze-oncpu-weights: every output weighs a record by the same on-CPU figure. A 32 MiB
# download with table AES (AES-NI masked by OPENSSL_ia32cap) by curl with call stacks
# (TLSMETER_STACKS=1) and TLSMETER_EVENTS=both, client and a busy loop pinned to one CPU, so
# that records are switched out in the middle; five runs. In each, against the report's crypto
# time (--json crypto_ns): the --folded weights summed, the --chrome record slices' oncpu_ns
# summed, the --perfetto record slices' oncpu_ns annotations summed (decoded by protoc), and
# the report of the same trace's summary events alone (summary mode), each within 1 %; the
# trace must have switched-out records and the written crypto_ns must differ from the report's
# (else the check would not be about them). Figures from one trace are compared, never timed.
# About 60 s.
# tlsm-arch: x86_64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=scripts/tlsmeter-mask.sh
. "$TLSM_TOP/scripts/tlsmeter-mask.sh"
d=$(case_dir)
trap tls_cleanup EXIT
tls_init "$d"
tls_need_preload analyze-oncpu-weights
A=$O/tlsmeter-analyze
T=$TLSM_TOP/tests/tools
TLS_RUN_TIMEOUT=120
RUNS=${TLSM_ONCPU_RUNS:-5}
MIB=${TLSM_ONCPU_MIB:-32}
if ! command -v curl >/dev/null; then
    skip "analyze-oncpu-weights: no curl"
    exit 0
fi
if ! tls_client_ok curl; then
    skip "analyze-oncpu-weights: $TLS_CLIENT_SKIP"
    exit 0
fi
"$TLSM_TOP/scripts/install-deps" --extra protobuf-compiler >/dev/null 2>&1
command -v protoc >/dev/null || echo "analyze-oncpu-weights: no protoc: --perfetto not checked" >&2

tls_make_file big.bin $((MIB * 1048576))
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "analyze-oncpu-weights: openssl s_server did not start"
    exit 0
fi
cpu=0
taskset -p -c "$cpu" "$TLS_SRV_PID" >/dev/null

# busy_start / busy_stop: a time-bounded busy loop pinned to $cpu, stopped by its PID.
busy_start() {
    timeout -k 1 180 taskset -c "$cpu" sh -c 'while :; do :; done' &
    BUSY=$!
    TLS_PIDS+=("$BUSY")
}
busy_stop() {
    tls_stop_pid "$BUSY"
}

# figures RUN TRACE: the report's crypto time and each output's sum, one "name value" a line.
figures() {
    local r=$1 tr=$2
    "$A" -q --json "$tr" >"$d/$r.json" || return 1
    "$A" -q --folded "$tr" >"$d/$r.folded" || return 1
    "$A" -q --chrome "$tr" >"$d/$r.chrome.json" || return 1
    "$A" -q --perfetto "$d/$r.pftrace" "$tr" >/dev/null || return 1
    "$TLSM_PY" "$T/split_both.py" "$d/$r.jsonl" "$d/$r.ev.jsonl" "$d/$r.sum.jsonl" || return 1
    "$A" -q --json "$d/$r.sum.jsonl" >"$d/$r.sum.json" || return 1
    if command -v protoc >/dev/null; then
        protoc --proto_path="$T" --decode=perfetto.protos.Trace "$T/perfetto_subset.proto" \
            <"$d/$r.pftrace" >"$d/$r.pftrace.txt" || return 1
    fi
    "$TLSM_PY" - "$d/$r" <<'EOF'
import json, os, sys
sys.path.insert(0, os.environ["TLSM_TOP"] + "/tests/tools")
from perfetto_check import parse
p = sys.argv[1]
j = json.load(open(p + ".json"))
print("report", j["crypto_ns"])
print("written", j["crypto_ns_written"])
print("left_out", j["records_left_out"])
print("cputime", j["cputime"])
print("folded", sum(int(l.rsplit(" ", 1)[1]) for l in open(p + ".folded") if l.strip()))
ch = json.load(open(p + ".chrome.json"))
print("chrome", sum(e["args"]["oncpu_ns"] for e in ch["traceEvents"]
                    if e.get("cat") == "record" and e["name"].startswith("decrypt")))
print("summary", json.load(open(p + ".sum.json"))["crypto_ns"])
try:
    text = open(p + ".pftrace.txt").read()
except OSError:
    sys.exit(0)
tot = 0
for pk in parse(text)["packet"]:
    for te in pk.get("track_event", []):
        if te["type"][0] != "TYPE_SLICE_BEGIN" or te["categories"][0] != "record":
            continue
        if not te["name"][0].startswith("decrypt"):
            continue
        ann = {a["name"][0]: a.get("int_value", ["0"])[0] for a in te.get("debug_annotations", [])}
        tot += int(ann["oncpu_ns"])
print("perfetto", tot)
EOF
}

# within1 A B: A within 1 % of B.
within1() {
    "$TLSM_PY" -c 'import sys; a, b = int(sys.argv[1]), int(sys.argv[2]); sys.exit(not (b > 0 and abs(a - b) <= 0.01 * b))' "$1" "$2"
}

declare -A ok=()
n_real=0
for r in $(seq 1 "$RUNS"); do
    TLS_ENV=("TLSMETER_STACKS=1" "TLSMETER_EVENTS=both" "OPENSSL_ia32cap=$TLSM_IA32_SOFT_MASK")
    busy_start
    tls_run "$d/run$r" "$d/run$r.%p.jsonl" taskset -c "$cpu" curl -sk -o /dev/null \
        "https://127.0.0.1:$TLS_PORT/big.bin"
    busy_stop
    TLS_ENV=()
    tls_traces "$d/run$r.*.jsonl"
    tr=${TRACES[0]:-}
    if [ -z "$tr" ] || [ "$(cat "$d/run$r.rc")" != 0 ]; then
        fail "analyze-oncpu-weights: run $r: no trace or curl failed ($(head -c 200 "$d/run$r.err"))"
        continue
    fi
    "$A" -q --jsonl "$tr" >"$d/run$r.jsonl"
    if ! figures "run$r" "$tr" >"$d/run$r.fig"; then
        fail "analyze-oncpu-weights: run $r: an output could not be written"
        continue
    fi
    declare -A f=()
    while read -r k v; do f[$k]=$v; done <"$d/run$r.fig"
    echo "run $r: $(tr '\n' ' ' <"$d/run$r.fig")"
    [ "${f[left_out]:-0}" -gt 0 ] && [ "${f[written]}" != "${f[report]}" ] && n_real=$((n_real + 1))
    for o in folded chrome perfetto summary; do
        [ -n "${f[$o]:-}" ] || continue
        if within1 "${f[$o]}" "${f[report]}"; then
            ok[$o]=$((${ok[$o]:-0} + 1))
        else
            echo "run $r: $o ${f[$o]} vs the report's ${f[report]}" >&2
        fi
    done
done

if [ "$n_real" -eq "$RUNS" ]; then
    pass "analyze-oncpu-weights: $RUNS of $RUNS runs with switched-out records whose written time differs from the report's"
else
    fail "analyze-oncpu-weights: $n_real of $RUNS runs had switched-out records (cputime $(grep cputime "$d"/run*.fig | head -1))"
fi
for o in folded chrome perfetto summary; do
    if ! command -v protoc >/dev/null && [ "$o" = perfetto ]; then
        skip "analyze-oncpu-weights: --perfetto: no protoc"
    elif [ "${ok[$o]:-0}" -eq "$RUNS" ]; then
        pass "analyze-oncpu-weights: $o total within 1 % of the report's crypto time in $RUNS of $RUNS runs"
    else
        fail "analyze-oncpu-weights: $o total within 1 % of the report's crypto time in ${ok[$o]:-0} of $RUNS runs"
    fi
done
