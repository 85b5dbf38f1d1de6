# tests/lib-dlsafe.sh: the safe-dl-* cases. tests/progs/dlsafe.c loads and unloads the plugins
# of tests/dlsafe/ (built into $O/tests/plugins) in the ways that once hung or crashed a traced
# program; each case runs it many times under the preload, every run bounded by timeout -k
# (a hang is a run that timed out), and wants every run to end as the untraced one does.
# Source after tests/lib.sh and tests/lib-tls.sh (and tests/lib-bullseye.sh for ds_bullseye).
# shellcheck shell=bash
#
#   ds_init NAME DIR          DIR gets copies of the plugins under the names dlsafe opens (each
#                             copy is another object); DS_PROG is the program. Fails the case
#                             when they are not built.
#   ds_repeat NAME RUNS ARGS...   `dlsafe ARGS` once untraced, then RUNS times traced (stops
#                             after $DS_MAXFAIL failed runs); one PASS or FAIL line counting
#                             hangs, crashes, runs that ended otherwise than untraced (exit
#                             code, stdout, stderr without tlsmeter's lines) and runs traced
#                             wrong: not one trace, or, for each of the first DS_CHECK_RUNS
#                             runs, what the function DS_CHECK printed when called as
#                             `fn TRACE STATS` (the trace as JSON Lines, the program's
#                             $DLSAFE_STATS file).
#   ds_need_deepbind NAME     skip the case (exit) under ASan, whose dlopen refuses
#                             RTLD_DEEPBIND (google/sanitizers#611)
#   ds_end TRACE              the trace's end event (one JSON line), empty when it has none
#   ds_hook TRACE FN          end.hooks.FN: the calls of hooked function FN the preload saw
#   ds_bullseye NAME          dlsafe and the plugins built against Debian 11's root (glibc
#                             2.31, OpenSSL 1.1.1), run through its own loader with the make
#                             dist library (tests/lib-bullseye.sh): ds_repeat then uses them.
#                             Skips the rest of the case (exit) when the root cannot be had.
# Knobs: TLSM_DLSAFE_RUNS (runs per check instead of the case's own count: fewer for a quick
# local run), TLSM_DLSAFE_TIMEOUT (seconds one run may take, default 20; untraced every run
# takes well under a second), TLSM_DLSAFE_MAXFAIL (failed runs before a check stops, 3),
# TLSM_DLSAFE_BZ_LIB (a dist library to run on Debian 11 instead of building make dist's).

DS_TIMEOUT=${TLSM_DLSAFE_TIMEOUT:-20}
DS_MAXFAIL=${TLSM_DLSAFE_MAXFAIL:-3}
DS_CHECK=
DS_CHECK_RUNS=3
DS_WHERE=host # or bullseye (ds_bullseye)

# Plugin copies: name in DIR <- built plugin.
DS_COPIES=(
    p1.so:leaf n2.so:nest n2-in.so:leaf
    outer.so:nest outer-in.so:leaf unrelate.so:other unrelat2.so:other
    r.so:leaf
    tls1.so:tlsplug tls2.so:tlsplug
    s-deep.so:leaf s-plain.so:leaf s-n1.so:nest s-n1-in.so:leaf s-n1-fin.so:leaf
    s-n2.so:nest s-n2-in.so:leaf
)

ds_init() {
    local c
    DS_DIR=$2
    DS_PROG=$O/tests/dlsafe
    DS_PLUG=$O/tests/plugins
    if [ ! -x "$DS_PROG" ] || [ ! -f "$DS_PLUG/leaf.so" ]; then
        fail "$1: $DS_PROG or $DS_PLUG missing: run make testprogs"
        exit 0
    fi
    mkdir -p "$DS_DIR"
    for c in "${DS_COPIES[@]}"; do
        cp "$DS_PLUG/${c#*:}.so" "$DS_DIR/${c%%:*}"
    done
}

ds_need_deepbind() {
    if [[ ${TLSM_SAN:-} == *address* ]]; then
        skip "$1: dlsafe dlopens RTLD_DEEPBIND, which ASan refuses (google/sanitizers#611)"
        exit 0
    fi
}

# ds_cmd [VAR=VAL...] ARGS...: the command line of one run of dlsafe ARGS, in DS_CMD.
ds_cmd() {
    local envs=()
    while [[ $# -gt 0 && $1 == [A-Za-z_]*=* ]]; do
        envs+=("$1")
        shift
    done
    if [ "$DS_WHERE" = bullseye ]; then
        bz_cmd "${envs[@]}" "$DS_PROG" "$@"
        DS_CMD=("${BZ_CMD[@]}")
    else
        target_cmd "${envs[@]}" "$DS_PROG" "$@"
        DS_CMD=("${TARGET_CMD[@]}")
    fi
}

# ds_one PREFIX [VAR=VAL...] ARGS...: one bounded run; PREFIX.out, .err, .rc, .stats.
ds_one() {
    local p=$1
    shift
    rm -f "$p".*
    ds_cmd DLSAFE_STATS="$p.stats" "$@"
    # In a subshell that exits with the status: bash's own "Segmentation fault" line about a
    # crashed run goes to /dev/null, the exit status (128 + signal) to PREFIX.rc.
    (
        timeout -k 5 "$DS_TIMEOUT" "${DS_CMD[@]}" >"$p.out" 2>"$p.err" </dev/null
        exit $?
    ) 2>/dev/null
    echo $? >"$p.rc"
}

ds_end() {
    grep -m 1 '"ev":"end"' "$1" 2>/dev/null
}

ds_hook() {
    ds_end "$1" | "$TLSM_PY" -c 'import json, sys
line = sys.stdin.readline()
print(json.loads(line).get("hooks", {}).get(sys.argv[1], "none") if line else "no end event")' "$2"
}

# ds_stat FILE KEY: KEY=N from the program's stats file.
ds_stat() {
    sed -n "s/.*\\b$2=\\([0-9]*\\).*/\\1/p" "$1" 2>/dev/null
}

ds_repeat() {
    local name=$1 runs=${TLSM_DLSAFE_RUNS:-$2} d=$DS_DIR/runs i p why rc
    local lib=${DS_LIB:-$TLSM_PRELOAD} hangs=0 crashes=0 other=0 wrong=0 good=0 first='' t0=$SECONDS
    local sigs=() args=${*:3}
    shift 2
    mkdir -p "$d"
    ds_one "$d/plain" "$@"
    if [ "$(cat "$d/plain.rc")" != 0 ]; then
        fail "$name: untraced run failed (exit $(cat "$d/plain.rc")): $(head -c 300 "$d/plain.err")"
        return
    fi
    for ((i = 1; i <= runs; i++)); do
        p=$d/t$i
        ds_one "$p" LD_PRELOAD="$lib" TLSMETER_OUT="$p.%p.trace" "$@"
        rc=$(cat "$p.rc")
        why=
        if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
            hangs=$((hangs + 1))
            why="run $i hung (no exit within ${DS_TIMEOUT} s)"
        elif [ "$rc" -gt 128 ]; then
            crashes=$((crashes + 1))
            sigs+=("$(kill -l "$((rc - 128))" 2>/dev/null || echo "$rc")")
            why="run $i died of SIG${sigs[-1]}"
        elif ! why=$(tls_same_run x "$d/plain" "$p"); then
            other=$((other + 1))
            why="run $i: $why"
        else
            why=
            good=$((good + 1))
            tls_traces "$p.*.trace"
            if [ "${#TRACES[@]}" -ne 1 ]; then
                why="left ${#TRACES[@]} traces, want 1"
            elif [ -n "$DS_CHECK" ] && [ "$good" -le "$DS_CHECK_RUNS" ]; then
                tlsm_jsonl "$p.%p.trace"
                why=$("$DS_CHECK" "${TRACES[0]}" "$p.stats")
            fi
            [ -n "$why" ] && wrong=$((wrong + 1)) && why="run $i: $why"
        fi
        if [ -n "$why" ]; then
            [ -z "$first" ] && first=$why
            [ $((hangs + crashes + other + wrong)) -ge "$DS_MAXFAIL" ] && { i=$((i + 1)); break; }
        else
            rm -f "$p".* # a good run's trace is not kept
        fi
    done
    runs=$((i - 1))
    local bad=$((hangs + crashes + other + wrong)) took=$((SECONDS - t0))
    if [ "$bad" -eq 0 ]; then
        pass "$name: $runs traced runs (dlsafe ${args//$DS_DIR/DIR}), none hung or crashed, each ended as untraced ($(head -n 1 "$d/plain.out")) (${took} s)"
    else
        fail "$name: $bad of $runs traced runs failed (dlsafe ${args//$DS_DIR/DIR}): $hangs hung (${DS_TIMEOUT} s bound), $crashes crashed${sigs[*]:+ (${sigs[*]})}, $other ended otherwise than untraced, $wrong traced wrong; first: $first"
    fi
}

# Debian 11: dlsafe and the plugins compiled against the root (the dist library asks for glibc
# 2.28 at most; a program built on this host would not run on 2.31), in DIR/bullseye.
ds_bullseye() {
    local name=$1 cc out=$DS_DIR/bullseye f
    if [ -n "${TLSM_DLSAFE_BZ_LIB:-}" ]; then
        # Another dist library (an older build, to compare): the root only, as bz_setup sets it.
        bz_setup_root "$name"
    else
        bz_setup "$name" "$(target_arch)"
    fi
    cc=gcc
    [ "$BZ_ARCH" = aarch64 ] && cc=aarch64-linux-gnu-gcc
    # shellcheck disable=SC2054 # -Wl,... words hold commas
    local flags=(-std=gnu11 -Wall -Wextra -O2 -D_GNU_SOURCE --sysroot="$BZ_ROOT"
        -I"$BZ_ROOT/usr/include/$BZ_TRIPLET" -I"$TLSM_TOP/tests/progs"
        -L"$BZ_ROOT/usr/lib/$BZ_TRIPLET" -Wl,-rpath-link,"$BZ_ROOT/usr/lib/$BZ_TRIPLET"
        -Wl,-rpath-link,"$BZ_ROOT/lib/$BZ_TRIPLET")
    mkdir -p "$out/plugins"
    if ! $cc "${flags[@]}" -o "$out/dlsafe" "$TLSM_TOP/tests/progs/dlsafe.c" -lssl -lcrypto \
        -lpthread -ldl 2>"$out/cc.err"; then
        fail "$name bullseye: dlsafe does not build against Debian 11: $(head -c 300 "$out/cc.err")"
        exit 0
    fi
    # tlsplug.c is written for OpenSSL 3 (the stress case runs on this host only).
    for f in "$TLSM_TOP"/tests/dlsafe/{leaf,nest,other}.c; do
        if ! $cc "${flags[@]}" -fPIC -shared -o "$out/plugins/$(basename "$f" .c).so" "$f" \
            -lssl -lcrypto -ldl 2>"$out/cc.err"; then
            fail "$name bullseye: $(basename "$f") does not build against Debian 11: $(head -c 300 "$out/cc.err")"
            exit 0
        fi
    done
    DS_WHERE=bullseye
    DS_LIB=$BZ_LIB
    DS_PROG=$out/dlsafe
    DS_PLUG=$out/plugins
    DS_DIR=$out/dir
    mkdir -p "$DS_DIR"
    for f in "${DS_COPIES[@]}"; do
        [ -f "$DS_PLUG/${f#*:}.so" ] && cp "$DS_PLUG/${f#*:}.so" "$DS_DIR/${f%%:*}"
    done
}

# bz_setup without the dist build: the library is $TLSM_DLSAFE_BZ_LIB.
bz_setup_root() {
    BZ_ARCH=$(target_arch)
    case $BZ_ARCH in
    x86_64) BZ_DEB=amd64 BZ_TRIPLET=x86_64-linux-gnu ;;
    aarch64) BZ_DEB=arm64 BZ_TRIPLET=aarch64-linux-gnu ;;
    esac
    bz_root "$1" "$BZ_DEB"
    BZ_LIB=$TLSM_DLSAFE_BZ_LIB
    # shellcheck disable=SC2034 # read by bz_cmd (tests/lib-bullseye.sh)
    BZ_LD=$BZ_ROOT/lib/$BZ_TRIPLET/ld-2.31.so
    # shellcheck disable=SC2034
    BZ_LIBPATH=$BZ_ROOT/lib/$BZ_TRIPLET:$BZ_ROOT/usr/lib/$BZ_TRIPLET
}
