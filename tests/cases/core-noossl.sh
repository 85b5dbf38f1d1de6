#!/usr/bin/env bash
# core-noossl: programs that never load OpenSSL run unchanged under the preload (stdout,
# stderr, exit code). The preload writes either no trace or a valid one holding only the
# header and end lines; the result line says which it did.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload core-noossl

# A C program linked against libc only (the Makefile links tests/progs with libssl).
cat >"$d/plain.c" <<'EOF'
#include <stdio.h>
int main(int argc, char **argv)
{
    printf("plain %d\n", argc);
    fprintf(stderr, "to stderr\n");
    return 5;
}
EOF
cc -o "$d/plain" "$d/plain.c" || fail "core-noossl: cannot build the libc-only program"

# shellcheck disable=SC2034 # used through a nameref
PROG_echo=(/bin/echo hello world)
# shellcheck disable=SC2034 # used through a nameref
PROG_exit3=(sh -c 'exit 3')
# shellcheck disable=SC2034 # used through a nameref
PROG_cprog=("$d/plain" a b)

for prog in echo exit3 cprog; do
    declare -n cmd=PROG_$prog
    name="core-noossl $prog"
    p=$d/$prog
    tls_run "$p.plain" "" "${cmd[@]}"
    tls_run "$p.traced" "$p.trace.%p.jsonl" "${cmd[@]}"
    unset -n cmd
    if ! why=$(tls_same_run "$name" "$p.plain" "$p.traced"); then
        fail "$name: $why"
        continue
    fi
    tls_traces "$p.trace.*"
    case ${#TRACES[@]} in
    0) pass "$name (no trace written)" ;;
    1) TLS_PASS_NOTE="header+end trace" tls_trace_check "$name" "${TRACES[0]}" --only-header-end ;;
    *) fail "$name: ${#TRACES[@]} trace files for one process" ;;
    esac
done
