#!/usr/bin/env bash
# cputime-agree: the on-CPU method `auto` picks on this kernel measures on-CPU time. With
# TLSMETER_CPUTIME_CHECK=1 the preload also reads the kernel's own thread CPU clock
# (CLOCK_THREAD_CPUTIME_ID) around every record and writes both sums in the end line
# (records the method flagged as preempted or stalled are left out of both, as the analyzer
# leaves them out of ns/B). For a curl download of >= 256 records, pinned to the server's CPU
# (a single-core board), alone and with a busy process on the same CPU, the method's sum
# must agree with the thread clock's (after the clock reads' own cost, measured before each
# span) within 5 % for perf-clock, 15 % for the wall-based methods (steal too short to flag,
# tests/tools/cputime_check.py TOL), and the contended run must flag records
# unless the method is exact (perf-clock). The pass lines name the method and why (the
# header's cputime and cputime_why): on x86_64 KVM guests perf-switch (no cap_user_time); in
# Debian's arm64 kernel under TCG, whatever that kernel offers (scripts/arm64vm, make
# check-arm64vm). qemu-user has no such kernel: skipped there.
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
N=cputime-agree
d=$(case_dir)
tls_init "$d"
tls_need_preload "$N"
if under_qemu; then
    skip "$N: qemu-user runs on the host's kernel and emulates the clocks (run it in the arm64 VM: make check-arm64vm)"
    exit 0
fi
MIB=${TLSM_CPUTIME_MIB:-32}
tls_make_file c.bin $((MIB * 1048576))
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "$N: openssl s_server did not start"
    exit 0
fi
cpu=$(($(nproc) - 1))
taskset -p -c "$cpu" "$TLS_SRV_PID" >/dev/null 2>&1 || true

# agree TAG CONTENDED: the end line's cputime_check of the run's trace.
agree() {
    "$TLSM_PY" - "$1" "$2" <<'PY'
import json, subprocess, sys, os
trace, contended = sys.argv[1], sys.argv[2] == "1"
lines = subprocess.run([os.environ["A"], "--jsonl", trace], capture_output=True, text=True).stdout
ev = [json.loads(l) for l in lines.splitlines() if l.startswith("{")]
hdr, end = ev[0], [e for e in ev if e.get("ev") == "end"][-1]
c = end.get("cputime_check")
if not c:
    sys.exit("no cputime_check in the end line")
method, why = hdr.get("cputime"), hdr.get("cputime_why", "")
n, pre = c["records"], c["preempted"]
# Each record's thread figure carries one read of the clock: its cost was measured just
# before the span (pair_sum_ns); older builds give only the median at exit (pair_ns).
pairs = c["pair_sum_ns"] if "pair_sum_ns" in c else n * c["pair_ns"]
thread = c["thread_ns"] - pairs
crypto = c["crypto_ns"]
if n < 100:
    sys.exit("only %d unflagged records" % n)
st = c.get("stalled", 0)
ratio = crypto / thread if thread > 0 else float("inf")
# perf-clock reads the task clock itself: 5 %. A wall clock (perf-switch, rseq) also holds
# steal too short to flag a record (tests/tools/cputime_check.py TOL): 15 % there.
tol = 0.05 if method == "perf-clock" else 0.15
msg = "method %s%s: %d records, method %.2f ms, thread clock %.2f ms (%.1f ms of reads taken off), ratio %.3f (tolerance %.0f %%), %d preempted, %d stalled (%.2f ms of span, %.2f ms of thread clock)" % (
    method, " (%s)" % why if why else "", n, crypto / 1e6, thread / 1e6, pairs / 1e6,
    ratio, 100 * tol, pre, st, c.get("stalled_crypto_ns", 0) / 1e6,
    c.get("stalled_thread_ns", 0) / 1e6)
if abs(ratio - 1) > tol:
    sys.exit("disagree: " + msg)
if contended and method != "perf-clock" and method != "wall" and pre + st == 0:
    sys.exit("a busy process on the same CPU, yet no record flagged: " + msg)
print("ok " + msg)
PY
}
export A=$O/tlsmeter-analyze

# verdict NAME TRACE CONTENDED: pass or fail with the figures (the method, both sums).
verdict() {
    local out
    if out=$(agree "$2" "$3" 2>&1); then
        pass "$1: ${out#ok }"
    else
        fail "$1: $(echo "$out" | tail -n 1)"
    fi
}

# run TAG: one traced download, checked for its bytes; the trace in TRACES[0].
run() {
    TLS_ENV=(TLSMETER_CPUTIME_CHECK=1)
    tls_client "$TLS_DL" "$TLS_PORT" c.bin "$d/$1" "$d/$1.%p.trace"
    TLS_ENV=()
    tls_traces "$d/$1.*.trace"
    if [ "$(cat "$d/$1.rc")" != 0 ] || [ "$(tls_size "$d/$1.body")" != $((MIB * 1048576)) ]; then
        fail "$N $1: download failed (exit $(cat "$d/$1.rc")): $(head -c 200 "$d/$1.err")"
        return 1
    fi
    [ "${#TRACES[@]}" -eq 1 ] || { fail "$N $1: ${#TRACES[@]} traces, want 1"; return 1; }
}

TLS_RUNAS=(taskset -c "$cpu")
if run alone; then
    verdict "$N alone: the method's crypto time agrees with the thread CPU clock" "${TRACES[0]}" 0
fi
# A competitor that never sleeps, on the client's CPU: the scheduler preempts the client.
taskset -c "$cpu" sh -c 'i=0; while [ $i -lt 100000000 ]; do i=$((i + 1)); done' &
busy=$!
if run busy; then
    verdict "$N contended: preempted records flagged, the rest agree with the thread clock" "${TRACES[0]}" 1
fi
tls_stop_pid "$busy"
TLS_RUNAS=()
tls_server_stop
