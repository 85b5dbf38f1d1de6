#!/usr/bin/env bash
# trust-contention: crypto time is on-CPU time. A 256 MiB hardware-AES download (our C client,
# openssl s_server, loopback) with client and server pinned to one CPU (a single-core board),
# alone and beside a busy process on the same CPU, with TLSMETER_CPUTIME_CHECK=1: every
# record's span also read on the kernel's thread CPU clock, so each run is checked against an
# independent clock in the same run (tests/tools/cputime_check.py agree), never against
# another run's timing: the records flagged neither preempted nor stalled agree with the
# thread clock (within 5 % for perf-clock, 15 % for wall-based methods), shares
# <= 100 %, and the contended runs (auto and rseq) flag records. Then the fallbacks:
# perf_event_open refused (seccomp, EACCES) gives rseq, rseq disabled in glibc gives wall,
# both with a reason; forced TLSMETER_CPUTIME values; an unprivileged user; a fork child's
# own page; no descriptor held per thread.
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=scripts/tlsmeter-mask.sh
. "$TLSM_TOP/scripts/tlsmeter-mask.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload trust-contention
CHECK=$TLSM_TOOLS/cputime_check.py
TLS_RUN_TIMEOUT=120
# 256 MiB: a record is preempted rarely (~1 in 1000 here); this size makes the contended runs
# see several, so a wall-time reading would fail the check (the sum of a few records
# switched out for a time slice each doubles the ns/B).
MIB=${TLSM_CONTENTION_MIB:-256}

tls_make_file big.bin $((MIB * 1048576))
tls_make_file mid.bin $((32 * 1048576))
tls_make_file fork.bin $((12 * 1048576))
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "trust-contention: openssl s_server did not start"
    exit 0
fi
ncpu=$(nproc)
cpu=$((ncpu - 1))
taskset -p -c "$cpu" "$TLS_SRV_PID" >/dev/null
# Under qemu (aarch64) the client is a target program started through qemu: no taskset in
# front of it (and no contention part: cputime is wall there).
PIN=(taskset -c "$cpu")
under_qemu && PIN=()

# header_key TRACE KEY: a string value of the trace header.
header_key() {
    head -n 1 "$1" | "$TLSM_PY" -c 'import json, sys; print(json.loads(sys.stdin.readline()).get(sys.argv[1], ""))' "$2"
}

# busy_start / busy_stop: a time-bounded busy loop pinned to $cpu, stopped by its PID.
busy_start() {
    timeout -k 1 180 taskset -c "$cpu" sh -c 'while :; do :; done' &
    BUSY=$!
    TLS_PIDS+=("$BUSY")
}
busy_stop() {
    tls_stop_pid "$BUSY"
}

# download NAME BUSY(0/1) FILE [CLIENT ARGS...]: one pinned traced download into $d/NAME.*.
download() {
    local name=$1 busy=$2 file=$3
    shift 3
    [ "$busy" = 1 ] && busy_start
    tls_run "$d/$name" "$d/$name.%p.jsonl" "${PIN[@]}" "$TLSM_PROGS/mtclient" \
        -p "$TLS_PORT" -c "$TLS_CERT" -t 1 -n 1 "$@" "/$file"
    [ "$busy" = 1 ] && busy_stop
    tls_traces "$d/$name.*.jsonl"
    if [ "$(cat "$d/$name.rc")" != 0 ] || ! tls_mt_ok "$d/$name.out" 1 >/dev/null ||
        [ "${#TRACES[@]}" != 1 ]; then
        fail "trust-contention $name: download failed or no single trace (exit" \
            "$(cat "$d/$name.rc"), ${#TRACES[@]} traces): $(head -c 300 "$d/$name.err")"
        return 1
    fi
    eval "T_${name//-/_}=${TRACES[0]}"
}

contention() {
    local method
    TLS_ENV=(TLSMETER_CPUTIME_CHECK=1)
    download alone 0 big.bin || return
    method=$(header_key "$T_alone" cputime)
    if [ "$method" = wall ]; then
        TLS_ENV=()
        skip "trust-contention: cputime is wall here ($(header_key "$T_alone" cputime_why))" \
            "- no switch detection, the contention rule cannot hold"
        return
    fi
    download contended 1 big.bin
    TLS_ENV=(TLSMETER_CPUTIME_CHECK=1 TLSMETER_CPUTIME=rseq)
    download contended-rseq 1 big.bin
    TLS_ENV=()
    agree "trust-contention: $method alone agrees with the thread clock (${MIB} MiB)" 0 \
        "$T_alone"
    local traces=()
    [ -n "${T_contended:-}" ] && traces+=("$T_contended")
    [ -n "${T_contended_rseq:-}" ] && traces+=("$T_contended_rseq")
    [ "${#traces[@]}" -gt 0 ] && agree "trust-contention: $method and rseq contended: records flagged, the rest agree with the thread clock" 1 "${traces[@]}"
}

# agree NAME CONTENDED(0/1) TRACE...: cputime_check.py agree, its figures shown.
agree() {
    local name=$1 opt=() out
    [ "$2" = 1 ] && opt=(--contended)
    shift 2
    if out=$("$TLSM_PY" "$CHECK" agree "${opt[@]}" "$@" 2>&1); then
        pass "$name"
    else
        fail "$name: $(grep '^bad ' <<<"$out" | head -n 3 | tr '\n' ' ')"
    fi
    sed 's/^/  /' <<<"$out"
}

# expect NAME TRACE METHOD WHY-PATTERN: the header's cputime and cputime_why.
expect() {
    local m w
    m=$(header_key "$2" cputime)
    w=$(header_key "$2" cputime_why)
    if [ "$m" = "$3" ] && [[ $w == $4 ]]; then
        pass "trust-contention $1: cputime=$m ($w)"
    else
        fail "trust-contention $1: cputime=$m cputime_why='$w', want $3 and '$4'"
    fi
}

# rseq_ok: glibc registers rseq here (under qemu-user it cannot: no rseq syscall).
rseq_ok() {
    local m
    m=$(header_key "$T_forced_rseq" cputime)
    [ "$m" = rseq ]
}

fallbacks() {
    local perf_m
    TLS_ENV=(TLSMETER_CPUTIME=wall)
    download forced-wall 0 mid.bin && expect "TLSMETER_CPUTIME=wall" "$T_forced_wall" wall \
        "TLSMETER_CPUTIME=wall"
    # (a stalled record may be: that judgment is the record's pace, not a switch check)
    [ -n "${T_forced_wall:-}" ] && check "trust-contention wall: no record flagged as preempted" \
        "$TLSM_PY" -c 'import json, sys
sys.exit(any(o.get("preempt") for o in map(json.loads, open(sys.argv[1])) if o["ev"] == "rec"))' "$T_forced_wall"
    TLS_ENV=(TLSMETER_CPUTIME=rseq)
    download forced-rseq 0 mid.bin || return
    TLS_ENV=()
    if ! rseq_ok; then
        expect "TLSMETER_CPUTIME=rseq without rseq" "$T_forced_rseq" wall \
            "TLSMETER_CPUTIME=rseq; rseq: *"
        under_qemu || fail "trust-contention: glibc registers no rseq on this host"
    else
        expect "TLSMETER_CPUTIME=rseq" "$T_forced_rseq" rseq "TLSMETER_CPUTIME=rseq"
    fi
    # perf_event_open refused as a container's seccomp profile refuses it.
    TLS_ENV=()
    tls_run "$d/noperf" "$d/noperf.%p.jsonl" "$TLSM_PROGS/noperf" "$TLSM_PROGS/mtclient" \
        -p "$TLS_PORT" -c "$TLS_CERT" -t 1 -n 1 /mid.bin
    tls_traces "$d/noperf.*.jsonl"
    if [ "$(cat "$d/noperf.rc")" = 127 ]; then
        skip "trust-contention: seccomp filter refused here: $(head -c 200 "$d/noperf.err")"
    elif [ "$(cat "$d/noperf.rc")" != 0 ] || [ "${#TRACES[@]}" != 1 ]; then
        fail "trust-contention noperf: exit $(cat "$d/noperf.rc"), ${#TRACES[@]} traces"
    elif rseq_ok; then
        expect "perf_event_open refused" "${TRACES[0]}" rseq "perf_event_open: EACCES"
    else
        expect "perf_event_open refused, no rseq" "${TRACES[0]}" wall \
            "perf_event_open: E*; rseq: *"
    fi
    # ... and rseq off in glibc as well: wall, saying both reasons.
    TLS_ENV=(GLIBC_TUNABLES=glibc.pthread.rseq=0)
    tls_run "$d/norseq" "$d/norseq.%p.jsonl" "$TLSM_PROGS/noperf" "$TLSM_PROGS/mtclient" \
        -p "$TLS_PORT" -c "$TLS_CERT" -t 1 -n 1 /mid.bin
    TLS_ENV=()
    tls_traces "$d/norseq.*.jsonl"
    if [ "$(cat "$d/norseq.rc")" = 0 ] && [ "${#TRACES[@]}" = 1 ]; then
        expect "perf refused, glibc.pthread.rseq=0" "${TRACES[0]}" wall \
            "perf_event_open: EACCES; rseq: not registered by glibc"
    elif [ "$(cat "$d/norseq.rc")" != 127 ]; then
        fail "trust-contention norseq: exit $(cat "$d/norseq.rc"), ${#TRACES[@]} traces"
    fi
    # Forced perf where it works: the same as auto.
    TLS_ENV=(TLSMETER_CPUTIME=perf)
    download forced-perf 0 mid.bin || return
    TLS_ENV=()
    perf_m=$(header_key "$T_forced_perf" cputime)
    case $perf_m in
    perf-clock | perf-switch) pass "trust-contention TLSMETER_CPUTIME=perf: $perf_m" ;;
    wall) under_qemu && pass "trust-contention TLSMETER_CPUTIME=perf: wall under qemu" ||
        fail "trust-contention TLSMETER_CPUTIME=perf: wall ($(header_key "$T_forced_perf" cputime_why))" ;;
    *) fail "trust-contention TLSMETER_CPUTIME=perf: cputime=$perf_m" ;;
    esac
    # A malformed value: one warning naming it, then auto.
    TLS_ENV=(TLSMETER_CPUTIME=fast)
    download bad-value 0 mid.bin || return
    TLS_ENV=()
    if grep -q 'TLSMETER_CPUTIME="fast" is not valid (expected auto, perf, rseq, wall)' \
        "$d/bad-value.err"; then
        pass "trust-contention: TLSMETER_CPUTIME=fast is named, auto used"
    else
        fail "trust-contention: no warning for TLSMETER_CPUTIME=fast: $(head -c 200 "$d/bad-value.err")"
    fi
}

# An unprivileged user: perf_event_paranoid <= 2 lets exclude_kernel task-clock through;
# Debian's default 3 refuses it, then rseq (or wall) with the reason.
unprivileged() {
    local paranoid m w
    [ "$(id -u)" = 0 ] || {
        skip "trust-contention nobody: not root"
        return
    }
    under_qemu && {
        skip "trust-contention nobody: under qemu"
        return
    }
    tls_nobody_dir "$TLSM_PROGS/mtclient" || return
    chmod 0777 "$TLS_NB_DIR"
    TLS_RUNAS=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
    TLS_PRELOAD=$TLS_NB_PRELOAD tls_run "$d/nobody" "$TLS_NB_DIR/nb.%p.jsonl" \
        "$TLS_NB_DIR/mtclient" -p "$TLS_PORT" -c "$TLS_NB_CERT" -t 2 -n 1 /mid.bin
    TLS_RUNAS=()
    tls_traces "$TLS_NB_DIR/nb.*.jsonl"
    if [ "$(cat "$d/nobody.rc")" != 0 ] || [ "${#TRACES[@]}" != 1 ]; then
        fail "trust-contention nobody: exit $(cat "$d/nobody.rc"), ${#TRACES[@]} traces:" \
            "$(head -c 200 "$d/nobody.err")"
        return
    fi
    paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
    m=$(header_key "${TRACES[0]}" cputime)
    w=$(header_key "${TRACES[0]}" cputime_why)
    if { [ "$paranoid" -le 2 ] && [[ $m == perf-* ]]; } ||
        { [ "$paranoid" -gt 2 ] && [ "$m" != wall ] && [[ $w == "perf_event_open: E"* ]]; }; then
        pass "trust-contention nobody (perf_event_paranoid $paranoid): cputime=$m"
    else
        fail "trust-contention nobody (perf_event_paranoid $paranoid): cputime=$m ($w)"
    fi
}

# fork(): the child must not read the parent's page (not mapped in the child, and it watched
# the parent's thread): it makes its own, which must see the busy loop's switches too. Table
# AES (capability mask) makes records ~40x longer, so most switches land inside one.
forked() {
    local p ppid cpid m
    busy_start
    TLS_ENV=(OPENSSL_ia32cap="$TLSM_IA32_SOFT_MASK")
    tls_run "$d/fork" "$d/fork.%p.jsonl" "${PIN[@]}" "$TLSM_PROGS/forkclient" \
        "$TLS_PORT" "$TLS_CERT" /fork.bin
    TLS_ENV=()
    busy_stop
    ppid=$(sed -n 's/^parent .*\bpid=\([0-9]*\).*/\1/p' "$d/fork.out")
    cpid=$(sed -n 's/^child .*\bpid=\([0-9]*\).*/\1/p' "$d/fork.out")
    if [ "$(cat "$d/fork.rc")" != 0 ] || [ ! -f "$d/fork.$cpid.jsonl" ]; then
        fail "trust-contention fork: exit $(cat "$d/fork.rc"), child trace" \
            "$(ls "$d"/fork.*.jsonl 2>/dev/null | tr '\n' ' '): $(head -c 200 "$d/fork.err")"
        return
    fi
    m=$(header_key "$d/fork.$ppid.jsonl" cputime)
    check "trust-contention fork: child's trace says $m, its records on its own page" \
        "$TLSM_PY" -c '
import json, sys
child, method = sys.argv[1], sys.argv[2]
lines = [json.loads(l) for l in open(child)]
h, end = lines[0], [o for o in lines if o["ev"] == "end"][-1]
recs = [o for o in lines if o["ev"] == "rec" and o.get("dir", "in") == "in"]
flagged = sum(1 for r in recs if r.get("preempt"))
assert h.get("fork_of") and h.get("cputime") == method, (h.get("fork_of"), h.get("cputime"))
assert len(recs) > 500 and all(r["crypto_ns"] > 0 for r in recs), len(recs)
assert end["preempted"] == flagged, (end["preempted"], flagged)
if method != "wall":
    seen = flagged if method != "perf-clock" else sum(1 for r in recs if "wall_ns" in r)
    assert seen >= 1, "no switch seen in the child under contention"
print("child: %d records, %d flagged" % (len(recs), flagged))
' "$d/fork.$cpid.jsonl" "$m"
}

# Pages stay mapped with their descriptors closed: none is held per thread.
no_fds() {
    local pid fds m maps=0
    under_qemu && return
    env LD_PRELOAD="$TLSM_PRELOAD" TLSMETER_OUT="$d/fds.%p.jsonl" "$TLSM_PROGS/mtclient" \
        -p "$TLS_PORT" -c "$TLS_CERT" -t 3 -n 2 -q /mid.bin >"$d/fds.out" 2>"$d/fds.err" &
    pid=$!
    TLS_PIDS+=("$pid")
    # Until each of the 3 threads has its page: a thread still between perf_event_open and
    # close (cputime.c perf_page) holds a descriptor for a moment, not for good.
    for _ in $(seq 200); do
        maps=$(grep -c 'perf_event' "/proc/$pid/maps" 2>/dev/null)
        [ "${maps:-0}" -ge 3 ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    fds=$(ls -l "/proc/$pid/fd" 2>/dev/null | grep -c 'perf_event')
    wait "$pid"
    local rc=$?
    tlsm_jsonl "$d/fds.%p.jsonl" # written in the default format 2: as JSON Lines for header_key
    m=$(header_key "$(ls "$d"/fds.*.jsonl | head -n 1)" cputime)
    if [ -z "$m" ]; then
        fail "trust-contention fds: no readable trace header (exit $rc): $(head -c 200 "$d/fds.err")"
    elif [[ $m != perf-* ]]; then
        skip "trust-contention fds: cputime=$m, no perf pages"
    elif [ "$rc" = 0 ] && [ "${maps:-0}" -ge 1 ] && [ "$fds" = 0 ]; then
        pass "trust-contention fds: $maps task-clock pages mapped, no perf descriptor open"
    else
        fail "trust-contention fds: exit $rc, $maps pages mapped, $fds perf descriptors open"
    fi
}

fallbacks
contention
unprivileged
forked
no_fds
