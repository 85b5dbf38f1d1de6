#!/usr/bin/env bash
# core-output: the trace cannot be written (missing directory, a file where a directory should
# be, a directory the user may not write, /dev/full). The program must run exactly as without
# the preload (stdout, stderr, exit code) and stderr gets exactly one line "tlsmeter: ...".
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload core-output

tls_make_file f.bin $((200 * 1024 + 3))
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "core-output: openssl s_server did not start"
    exit 0
fi
touch "$d/afile"
# The read-only case runs as nobody: its files and directory must be reachable for nobody.
tls_nobody_dir "$TLSM_PROGS/mtclient"
ro=$TLS_NB_DIR/ro
mkdir -p "$ro" && chmod 0555 "$ro"
# /dev/full.N must not appear: with O_EXCL the writer may try NAME.1 ... next to the target.
# devfull_side: files /dev/full.* that were not there when the case started.
devfull_side() {
    local f
    for f in /dev/full.*; do
        [ -e "$f" ] && ! grep -qxF "$f" "$d/devfull.before" && echo "$f"
    done
}
: >"$d/devfull.before"
for f in /dev/full.*; do
    [ -e "$f" ] && echo "$f" >>"$d/devfull.before"
done
TLS_EXTRA_CLEANUP='devfull_side | xargs -r rm -f'

# Programs: a TLS download to stdout (the preload is busy), and one that never loads OpenSSL.
# shellcheck disable=SC2034 # used through a nameref
if [ "$TLS_DL" = curl ]; then
    PROG_dl=(curl -sS --cacert "$TLS_NB_CERT" "https://127.0.0.1:$TLS_PORT/f.bin")
else
    PROG_dl=("$TLS_NB_DIR/mtclient" -q -p "$TLS_PORT" -c "$TLS_NB_CERT" -t 1 -n 1 \
        -o /dev/stdout /f.bin)
fi
# shellcheck disable=SC2034 # used through a nameref
PROG_sh=(sh -c 'echo out; echo err >&2; exit 7')

# check_one NAME TEMPLATE PROG: run PROG plain and with TLSMETER_OUT=TEMPLATE (as TLS_RUNAS).
check_one() {
    local name="core-output $1 ${3/#dl/$TLS_DL}" tmpl=$2 prog=$3 p=$d/$1.$3 why n
    local -n cmd=PROG_$prog
    tls_run "$p.plain" "" "${cmd[@]}"
    tls_run "$p.traced" "$tmpl" "${cmd[@]}"
    if ! why=$(tls_same_run "$name" "$p.plain" "$p.traced"); then
        fail "$name: $why"
        return
    fi
    n=$(tls_notes "$p.traced.err")
    # A program that never loads OpenSSL may never open the trace, so no warning is fine there.
    if [ "$n" -eq 1 ] || { [ "$prog" = sh ] && [ "$n" -eq 0 ]; }; then
        pass "$name ($n warning line: $(grep -m1 '^tlsmeter:' "$p.traced.err" | head -c 100))"
    else
        fail "$name: $n tlsmeter lines on stderr, want exactly 1: $(grep '^tlsmeter:' \
            "$p.traced.err" | head -n 3 | tr '\n' ' ')"
    fi
}

for prog in dl sh; do
    check_one missing-dir "$d/nonexistent/t.%p.jsonl" "$prog"
    check_one not-a-dir "$d/afile/t.%p.jsonl" "$prog"
    check_one dev-full /dev/full "$prog"
    if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
        # root writes anywhere: the permission case runs as nobody.
        TLS_RUNAS=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
        TLS_PRELOAD=$TLS_NB_PRELOAD
        check_one read-only-dir "$ro/t.%p.jsonl" "$prog"
        TLS_RUNAS=()
        TLS_PRELOAD=
    else
        skip "core-output read-only-dir ${prog/#dl/$TLS_DL}: needs root and setpriv to run as nobody"
    fi
done

extra=$(devfull_side)
if [ -n "$extra" ]; then
    fail "core-output dev-full side files: the preload created $(echo "$extra" | tr '\n' ' ')"
else
    pass "core-output dev-full side files: none created in /dev"
fi
[ -z "$(ls -A "$ro")" ] || fail "core-output read-only-dir: files appeared in $ro"
[ ! -e "$d/nonexistent" ] || fail "core-output missing-dir: $d/nonexistent was created"
