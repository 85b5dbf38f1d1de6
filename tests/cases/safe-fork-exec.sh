#!/usr/bin/env bash
# safe-fork-exec: forked children and the exec list forms under TLSMETER_OUT=DIR.
#  - fork without exec (a server's workers): the child's trace is DIR/tlsmeter.PID.trace, as
#    the parent's, with DIR given with and without a trailing slash; nothing beside DIR,
#    nothing hidden in it;
#  - fork + execl/execlp/execle of a program that never does TLS (pg_ctl): no file at all,
#    and the exec'd program gets the same arguments, environment (execle's envp, not ours),
#    PATH search (a script without #! run by /bin/sh) and errno as untraced;
#  - a forked child that downloads, then execl/execlp/execle: a complete trace, ending with
#    an end line naming the exec, no zero-filled gaps left in the file.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload safe-fork-exec

tls_make_file f.bin $((200 * 1024 + 7))
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "safe-fork-exec: openssl s_server did not start"
    exit 0
fi

# field ROLE KEY FILE: KEY=VALUE from a test program's line for ROLE.
field() {
    sed -n "s/^$1 .*\\b$2=\\([0-9a-f]*\\).*/\\1/p" "$3"
}

# others NAME DIR WANT...: fail NAME unless DIR holds exactly the files WANT (names, sorted)
# and nothing named DIR.* lies beside it. True when that holds.
others() {
    local name=$1 dir=${2%/} got want
    shift 2
    got=$(cd "$dir" && find . -mindepth 1 -printf '%P\n' | sort | tr '\n' ' ')
    want=$(printf '%s\n' "$@" | sed '/^$/d' | sort | tr '\n' ' ')
    local beside
    beside=$(cd "$(dirname "$dir")" && find . -maxdepth 1 -name "$(basename "$dir").*" -printf '%P ')
    if [ "$got" != "$want" ] || [ -n "$beside" ]; then
        fail "$name: want in $(basename "$dir")/ [${want% }], found [${got% }]; beside it: [${beside% }]"
        return 1
    fi
    return 0
}

# 1. fork without exec: the child's trace inside DIR, named like the parent's.
fork_dir() {
    local name=$1 out=$2 dir=${2%/} p=$d/$1 ppid cpid
    mkdir -p "$dir"
    tls_run "$p.plain" "" "$TLSM_PROGS/forkclient" "$TLS_PORT" "$TLS_CERT" /f.bin
    tls_run "$p.traced" "$out" "$TLSM_PROGS/forkclient" "$TLS_PORT" "$TLS_CERT" /f.bin
    if [ "$(cat "$p.traced.rc")" != 0 ] ||
        [ "$(sed -E 's/pid=[0-9]+ ppid=[0-9]+//' "$p.plain.out")" != \
        "$(sed -E 's/pid=[0-9]+ ppid=[0-9]+//' "$p.traced.out")" ]; then
        fail "safe-fork-exec $name: forkclient output or exit code differs with the preload" \
            "(exit $(cat "$p.traced.rc"): $(head -c 200 "$p.traced.err"))"
        return
    fi
    ppid=$(field parent pid "$p.traced.out")
    cpid=$(field child pid "$p.traced.out")
    others "safe-fork-exec $name: one trace per process in the directory" "$dir" \
        "tlsmeter.$ppid.jsonl" "tlsmeter.$cpid.jsonl" || return
    pass "safe-fork-exec $name: one trace per process in the directory"
    tls_trace_check "safe-fork-exec $name child" "$dir/tlsmeter.$cpid.jsonl" --pid "$cpid" \
        --fork-of "$ppid" --conns 1 --closed --full-read --got "$(field child got "$p.traced.out")"
}
fork_dir fork-dir "$d/out1"
fork_dir fork-dir-slash "$d/out2/"

# 2. fork + exec*l of a program without TLS: same result as untraced, no file left.
PATH_T=$d/bin:$PATH
mkdir -p "$d/bin"
# shellcheck disable=SC2016 # expanded by the script's sh
printf 'echo "script:$1:$2"\n' >"$d/bin/noshebang"
chmod 755 "$d/bin/noshebang"
exec_plain() {
    local name=$1 p=$d/$1 dir=$d/$1.out
    shift
    mkdir -p "$dir"
    TLS_ENV=(PATH="$PATH_T" TLSM_ENVCHK=environ)
    tls_run "$p.plain" "" env PATH="$PATH_T" TLSM_ENVCHK=environ "$TLSM_PROGS/forkexecl" "$@"
    tls_run "$p.traced" "$dir" "$TLSM_PROGS/forkexecl" "$@"
    TLS_ENV=()
    if [ "$(cat "$p.traced.rc")" != "$(cat "$p.plain.rc")" ] ||
        [ "$(sed -E 's/pid=[0-9]+//g' "$p.plain.out")" != "$(sed -E 's/pid=[0-9]+//g' "$p.traced.out")" ]; then
        fail "safe-fork-exec $name: output or exit code differs with the preload:" \
            "$(tr '\n' ' ' <"$p.plain.out") (exit $(cat "$p.plain.rc")) vs" \
            "$(tr '\n' ' ' <"$p.traced.out") (exit $(cat "$p.traced.rc")) $(head -c 200 "$p.traced.err")"
        return
    fi
    if [ -n "${WANT_OUT:-}" ] && ! grep -qxF "$WANT_OUT" "$p.plain.out"; then
        fail "safe-fork-exec $name: untraced output '$(tr '\n' ' ' <"$p.plain.out")', want '$WANT_OUT'"
        return
    fi
    others "safe-fork-exec $name: same output, no trace file" "$dir" &&
        pass "safe-fork-exec $name: same output, no trace file"
}
# shellcheck disable=SC2016 # expanded by the inner sh
{
    WANT_OUT='l:/bin/sh:environ' exec_plain execl l /bin/sh -c 'echo "l:$0:$TLSM_ENVCHK"'
    WANT_OUT='lp:sh:environ' exec_plain execlp lp sh -c 'echo "lp:$0:$TLSM_ENVCHK"'
    WANT_OUT='script:x:y' exec_plain execlp-script lp noshebang x y
    WANT_OUT='exec failed: errno=2' exec_plain execlp-missing lp tlsm-no-such-program x y
    WANT_OUT='le:one:two:none:none' exec_plain execle le /bin/sh -c \
        'echo "le:$TLSM_LE:$TLSM_LE2:${LD_PRELOAD:-none}:${TLSM_ENVCHK:-none}"'
    WANT_OUT='exec failed: errno=13' exec_plain execle-noexec le "$d/bin" x y
}

# 3. a forked child that downloads, then exec*l: its trace is complete, ends naming the exec.
exec_tls() {
    local name=$1 mode=$2 prog=$3 p=$d/$1 dir=$d/$1.out cpid f
    shift 3
    mkdir -p "$dir"
    tls_run "$p.plain" "" "$TLSM_PROGS/forkexecl" --tls "$TLS_PORT" "$TLS_CERT" /f.bin \
        "$mode" "$prog" "$@"
    TLS_KEEP_FORMAT=1 tls_run "$p.traced" "$dir" "$TLSM_PROGS/forkexecl" --tls "$TLS_PORT" \
        "$TLS_CERT" /f.bin "$mode" "$prog" "$@"
    if [ "$(cat "$p.traced.rc")" != 0 ] ||
        [ "$(sed -E 's/pid=[0-9]+//g' "$p.plain.out")" != "$(sed -E 's/pid=[0-9]+//g' "$p.traced.out")" ]; then
        fail "safe-fork-exec $name: output or exit code differs with the preload" \
            "(exit $(cat "$p.traced.rc"): $(head -c 200 "$p.traced.err"))"
        return
    fi
    cpid=$(field tlschild pid "$p.traced.out")
    f=$dir/tlsmeter.$cpid.trace
    others "safe-fork-exec $name: the child's trace only" "$dir" "tlsmeter.$cpid.trace" &&
        pass "safe-fork-exec $name: the child's trace only"
    [ -f "$f" ] || f=$dir.$cpid # where else it may be: its content is checked all the same
    tls_trace_check "safe-fork-exec $name: a complete trace" "$f" --pid "$cpid" \
        --fork-of "$(field tlschild ppid "$p.traced.out")" --conns 1 --closed --full-read \
        --got "$(field tlschild got "$p.traced.out")"
    check "safe-fork-exec $name: ends naming the exec, no zero-filled gap" "$TLSM_PY" - "$f" \
        "$prog" "$O/tlsmeter-analyze" <<'PY'
import json, subprocess, sys
raw = open(sys.argv[1], "rb").read()
gap = raw.find(b"\0" * 4096)
assert gap < 0, "%d bytes, zeros from offset %d" % (len(raw), gap)
out = subprocess.run([sys.argv[3], "-q", "--jsonl", sys.argv[1]], check=True,
                     stdout=subprocess.PIPE).stdout
ev = [json.loads(l) for l in out.splitlines()]
assert ev and ev[-1]["ev"] == "end", "last event: %s" % (ev[-1]["ev"] if ev else None)
assert ev[-1].get("exec") == sys.argv[2], ev[-1].get("exec")
PY
}
exec_tls tls-execl l /bin/echo replaced l
exec_tls tls-execlp lp echo replaced lp
exec_tls tls-execle le /bin/echo replaced le
tls_server_stop
