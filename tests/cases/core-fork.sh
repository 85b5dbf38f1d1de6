#!/usr/bin/env bash
# core-fork: TLS in a parent, fork() without exec, TLS in the child and again in the parent.
# Two complete traces: the parent's with its two connections, the child's (fork_of = parent)
# with only its own, and no event of one process in the other's file.
# tlsm-arch: x86_64 aarch64
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload core-fork

tls_make_file f.bin $((300 * 1024 + 5))
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "core-fork: openssl s_server did not start"
    exit 0
fi

# field ROLE KEY FILE: KEY=VALUE from forkclient's line for ROLE.
field() {
    sed -n "s/^$1 .*\\b$2=\\([0-9a-f]*\\).*/\\1/p" "$3"
}

# run_fork NAME TEMPLATE GLOB_PARENT GLOB_CHILD: run forkclient traced with TLSMETER_OUT=TEMPLATE;
# the two globs (with PID placeholders filled in) name the expected files.
run_fork() {
    local name=$1 tmpl=$2 p=$d/$1 ppid cpid
    tls_run "$p.plain" "" "$TLSM_PROGS/forkclient" "$TLS_PORT" "$TLS_CERT" /f.bin
    tls_run "$p.traced" "$tmpl" "$TLSM_PROGS/forkclient" "$TLS_PORT" "$TLS_CERT" /f.bin
    if [ "$(cat "$p.plain.rc")" != 0 ]; then
        fail "core-fork $name: forkclient failed without the preload: $(head -c 200 "$p.plain.err")"
        return
    fi
    if [ "$(cat "$p.traced.rc")" != 0 ] ||
        [ "$(sed -E 's/pid=[0-9]+ ppid=[0-9]+//' "$p.plain.out")" != \
        "$(sed -E 's/pid=[0-9]+ ppid=[0-9]+//' "$p.traced.out")" ]; then
        fail "core-fork $name: forkclient output or exit code differs with the preload" \
            "(exit $(cat "$p.traced.rc"): $(head -c 200 "$p.traced.err"))"
        return
    fi
    ppid=$(field parent pid "$p.traced.out")
    cpid=$(field child pid "$p.traced.out")
    local pf=${3//PARENT/$ppid} cf=${4//CHILD/$cpid}
    if [ ! -f "$pf" ] || [ ! -f "$cf" ]; then
        fail "core-fork $name: want traces $(basename "$pf") and $(basename "$cf"), found:" \
            "$(cd "$d" && echo *.jsonl*)"
        return
    fi
    tls_trace_check "core-fork $name parent" "$pf" --pid "$ppid" --conns 2 --closed --full-read \
        --got $(($(field parent got "$p.traced.out") + $(field parent2 got "$p.traced.out")))
    tls_trace_check "core-fork $name child" "$cf" --pid "$cpid" --fork-of "$ppid" --conns 1 --closed \
        --full-read --got "$(field child got "$p.traced.out")"
}

run_fork pid-template "$d/t1.%p.jsonl" "$d/t1.PARENT.jsonl" "$d/t1.CHILD.jsonl"
# A template without %p: the parent writes the name as given, the child appends .PID.
run_fork fixed-name "$d/t2.jsonl" "$d/t2.jsonl" "$d/t2.jsonl.CHILD"
