# shellcheck shell=bash
# lib-bench.sh: what scripts/bench, bench-stacks, bench-reroute, bench-instructions and demo
# share: errors, a loopback `openssl s_server -WWW` with a throw-away certificate, server and
# client pinned to CPUs of their own (pin_cpus), running a program with or without the
# preload, the CPU of one download, medians, quantiles and arithmetic.
# Sourced after the caller set `here` (its directory); sets top, O, LIB, MIB, ROUNDS.
# Errors are prefixed with the caller's name (die), so messages read as before.

top=$(cd "${here:?set here before sourcing lib-bench.sh}/.." && pwd)
# The software mask (TLSM_IA32_SOFT_MASK, TLSM_ARM_SOFT_MASK, tlsm_soft_mask): one definition.
# shellcheck source=scripts/tlsmeter-mask.sh
. "$here/tlsmeter-mask.sh"
O=${O:-$top/build}
LIB=$O/libtlsmeter.so
MIB=${BENCH_MIB:-1024}
ROUNDS=${BENCH_ROUNDS:-3}
srv_pid=
RUN=
# The command prefix start_server puts before the server (pin_cpus sets it), and what pin_cpus
# decided, for the caller's output.
SRV_PIN=()
PIN_NOTE="unpinned"

die() {
    echo "${0##*/}: $*" >&2
    exit 1
}

stop_server() {
    [ -n "$srv_pid" ] || return 0
    kill "$srv_pid" 2>/dev/null
    for _ in $(seq 50); do
        kill -0 "$srv_pid" 2>/dev/null || break
        sleep 0.05
    done
    kill -9 "$srv_pid" 2>/dev/null
    wait "$srv_pid" 2>/dev/null
    srv_pid=
}

# cleanup: the server stopped, this run's directory (run_dir) removed. Trapped on EXIT.
cleanup() {
    stop_server
    [ -n "$RUN" ] && rm -rf "$RUN"
    RUN=
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# run_dir PARENT NAME: a fresh directory PARENT/NAME.XXXXXX with www/ in it, as RUN, removed by
# cleanup. Each run has its own: two benches at once must not swap certificates or traces.
run_dir() {
    mkdir -p "$1" || die "cannot create $1"
    RUN=$(mktemp -d "$1/$2.XXXXXX") || die "cannot create a directory in $1"
    mkdir -p "$RUN/www" || die "cannot create $RUN/www"
}

# make_cert DIR [DAYS]: DIR/cert.pem and DIR/key.pem for 127.0.0.1 (and localhost).
make_cert() {
    openssl req -x509 -newkey rsa:2048 -nodes -days "${2:-2}" -subj /CN=localhost \
        -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
        -keyout "$1/key.pem" -out "$1/cert.pem" >/dev/null 2>&1 || die "openssl req failed"
}

free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 20000))
}

# start_server DIR [SUITE]: openssl s_server -WWW serving DIR/www with DIR/cert.pem, TLS 1.3
# only, SUITE (TLS_AES_128_GCM_SHA256) on a free loopback port; sets port and srv_pid. The
# port is free when chosen, not when bound: a lost race retries with another.
start_server() {
    local dir=$1 suite=${2:-TLS_AES_128_GCM_SHA256}
    stop_server
    [ -s "$dir/cert.pem" ] || make_cert "$dir"
    for _ in 1 2 3 4 5; do
        port=$(free_port)
        (cd "$dir/www" && exec "${SRV_PIN[@]}" env -u LD_PRELOAD openssl s_server -accept "127.0.0.1:$port" \
            -cert "$dir/cert.pem" -key "$dir/key.pem" -WWW -tls1_3 -ciphersuites "$suite" \
            </dev/null) >"$dir/server.log" 2>&1 &
        srv_pid=$!
        for _ in $(seq 100); do
            grep -q ACCEPT "$dir/server.log" 2>/dev/null && return 0
            kill -0 "$srv_pid" 2>/dev/null || break
            sleep 0.05
        done
        stop_server
    done
    die "openssl s_server did not start: $(tail -n 3 "$dir/server.log")"
}

# pin_cpus: with two or more CPUs, the servers go to CPU 0 (start_server, and callers that put
# "${SRV_PIN[@]}" before theirs) and this shell, so every client it starts later, to CPU 1:
# a client and its server sharing both CPUs freely migrate and preempt each other, which on
# a shared 2-vCPU machine spread the same 1 GiB download's CPU over 0.74-1.04 s (pinned:
# 0.82-0.93 s). Unpinned with one CPU, without taskset, or with BENCH_PIN=0; PIN_NOTE says
# which. Call it before starting any server.
# shellcheck disable=SC2034 # PIN_NOTE is for the callers
pin_cpus() {
    local n
    n=$(nproc 2>/dev/null) || n=1
    if [ "${BENCH_PIN:-1}" = 0 ]; then
        PIN_NOTE="unpinned (BENCH_PIN=0)"
    elif [ "$n" -lt 2 ]; then
        PIN_NOTE="unpinned ($n CPU: server and client share it)"
    elif ! command -v taskset >/dev/null; then
        PIN_NOTE="unpinned (no taskset)"
    elif taskset -pc 1 $$ >/dev/null 2>&1; then
        SRV_PIN=(taskset -c 0)
        PIN_NOTE="pinned with taskset: servers on CPU 0, clients on CPU 1 (BENCH_PIN=0: unpinned)"
    else
        PIN_NOTE="unpinned (taskset could not pin this shell to CPU 1)"
    fi
}

# with MODE [VAR=VALUE...] CMD...: run CMD (a program or a shell function) with
#   none      no preload;
#   fwd       the forward-only preload $FWD (scripts/bench builds it from tests/bench/fwd.c);
#   disabled  libtlsmeter.so with TLSMETER_DISABLE=1: loaded and forwarding, tracing nothing;
#   full      libtlsmeter.so tracing to $TRACE (default $RUN/trace.%p.jsonl), quietly;
# then the VAR=VALUE settings, which may override the mode's (TLSMETER_OUT=...). Only CMD's
# children see them: a subshell exports them, so CMD may be a function that runs a program.
with() {
    local mode=$1
    shift
    (
        case $mode in
        none) unset LD_PRELOAD ;;
        fwd) export LD_PRELOAD=$FWD ;;
        disabled) export LD_PRELOAD=$LIB TLSMETER_DISABLE=1 ;;
        full)
            export LD_PRELOAD=$LIB TLSMETER_OUT=${TRACE:-$RUN/trace.%p.jsonl} TLSMETER_QUIET=1
            ;;
        *) die "with: unknown mode $mode" ;;
        esac
        while [ $# -gt 0 ] && [[ $1 == [A-Za-z_]*=* ]]; do
            export "${1?}"
            shift
        done
        "$@"
    )
}

# The interpreter itself, not a wrapper: a pyenv-style shim runs a chain of ~40 shell and
# helper processes before it execs python, under whatever preload the caller set.
PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
[ -x "$PY" ] || PY=python3

# child_cpu [--sha256] CMD...: run CMD; print "CPU_SECONDS OUT": CMD's user + system CPU (its
# own and its waited-for children's, from wait4 on CMD alone), and its stdout stripped (with
# --sha256: the sha256 of its stdout, read as it comes), or "failed" when it exits non-zero.
# Not RUSAGE_CHILDREN: that also holds whatever the process reaped before it became python
# (rusage survives exec), e.g. a shim's helpers, each paying the preload's per-process cost:
# under pyenv that added 0.07 s untraced, 0.11 s traced and 0.25 s in summary mode to every
# reading. python runs under the same preload, but never uses TLS.
child_cpu() {
    "$PY" -c 'import hashlib, os, subprocess, sys
sha = sys.argv[1] == "--sha256"
p = subprocess.Popen(sys.argv[1 + sha:], stdout=subprocess.PIPE)
if sha:
    h = hashlib.sha256()
    for chunk in iter(lambda: p.stdout.read(1 << 20), b""):
        h.update(chunk)
    out = h.hexdigest()
else:
    out = p.stdout.read().decode().strip()
_, status, u = os.wait4(p.pid, 0)
ok = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
print("%.4f %s" % (u.ru_utime + u.ru_stime, out if ok else "failed"))' "$@"
}

# The curl that downloads: the host's, or with BENCH_USERLAND=trixie Debian 13's (OpenSSL 3.5)
# through its own loader (scripts/debian-root; the loader honours LD_PRELOAD as the host's
# does), so the same figures can be taken on another OpenSSL. x86_64 only.
CURL=(curl)
if [ -n "${BENCH_USERLAND:-}" ]; then
    ul_root=$("$here/debian-root" "$BENCH_USERLAND" amd64 | tail -n 1) ||
        die "no Debian root for BENCH_USERLAND=$BENCH_USERLAND"
    ul_lib=$ul_root/usr/lib/x86_64-linux-gnu
    CURL=("$ul_lib/ld-linux-x86-64.so.2" --library-path "$ul_lib" "$ul_root/usr/bin/curl")
fi

# download_cpu MODE [VAR=VALUE...]: one curl download of big.bin from the server, with MODE
# (see with); prints "CPU_SECONDS BYTES" (curl's user + sys; bytes received).
download_cpu() {
    with "$@" child_cpu "${CURL[@]}" -sS --max-time 300 --cacert "$RUN/cert.pem" -o /dev/null \
        -w '%{size_download}' "https://127.0.0.1:$port/big.bin"
}

# cpu_rounds ARRAY MODE...: ROUNDS rounds of bench_download MODE, the modes interleaved so
# drifting machine load hits them alike; checks the bytes and appends each run's seconds to
# ARRAY[MODE]. A caller may redefine bench_download (MODE to settings) and after_download
# (what to note of a run, e.g. from its trace).
bench_download() { download_cpu "$1"; }
after_download() { :; }
cpu_rounds() {
    local -n runs=$1
    local want=$((MIB * 1024 * 1024)) mode secs bytes
    shift
    for _ in $(seq "$ROUNDS"); do
        for mode in "$@"; do
            read -r secs bytes < <(bench_download "$mode")
            [ "$bytes" = "$want" ] || die "download ($mode) got '$bytes' bytes, want $want"
            runs["$mode"]+="$secs "
            after_download "$mode"
        done
    done
}

# median NUMBERS: the middle of the numbers (one or more arguments, space-separated).
median() {
    local -a v
    read -ra v <<<"$*"
    [ ${#v[@]} -gt 0 ] || { echo nan; return; }
    printf '%s\n' "${v[@]}" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}

# quantiles NUMBERS: "MIN Q1 MEDIAN Q3 MAX" of the numbers (linear interpolation between the
# sorted values, as R's and numpy's defaults), or "nan" five times when there are none.
quantiles() {
    local -a v
    read -ra v <<<"$*"
    [ ${#v[@]} -gt 0 ] || { echo nan nan nan nan nan; return; }
    printf '%s\n' "${v[@]}" | sort -g | awk '{v[NR] = $1}
        function q(p,   h, i) {
            h = (NR - 1) * p + 1
            i = int(h)
            return (i >= NR) ? v[NR] : v[i] + (h - i) * (v[i + 1] - v[i])
        }
        END {printf "%s %s %s %s %s\n", v[1], q(0.25), q(0.5), q(0.75), v[NR]}'
}

# calc FORMAT EXPR: EXPR evaluated by awk, printed with FORMAT.
calc() {
    awk "BEGIN {printf \"$1\\n\", $2}"
}

# verdict VALUE OP LIMIT [MISS]: "ok" when VALUE OP LIMIT (<= or >=), else MISS (OVER).
verdict() {
    awk -v v="$1" -v l="$3" -v op="$2" -v miss="${4:-OVER}" \
        'BEGIN {print ((op == "<=") ? (v <= l) : (v >= l)) ? "ok" : miss}'
}
