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

# Summary mode writes its totals only where there was TLS to count: a program
# that never spoke TLS gets no trace (it used to open one at exit in every process, and
# calibrate the clock for it).
for prog in echo exit3 cprog; do
    declare -n cmd=PROG_$prog
    name="core-noossl summary $prog"
    p=$d/$prog.sum
    TLS_ENV=(TLSMETER_EVENTS=summary)
    tls_run "$p.traced" "$p.trace.%p.jsonl" "${cmd[@]}"
    TLS_ENV=()
    unset -n cmd
    if ! why=$(tls_same_run "$name" "$d/$prog.plain" "$p.traced"); then
        fail "$name: $why"
        continue
    fi
    tls_traces "$p.trace.*"
    if [ ${#TRACES[@]} -eq 0 ]; then
        pass "$name (no trace written)"
    else
        fail "$name: ${#TRACES[@]} trace file(s) for a process without TLS: ${TRACES[*]}"
    fi
done

# TLSMETER_CRYPTO=hw loads its private libcrypto copy (a memfd named
# tlsmeter-backend) at start-up only where a libcrypto is loaded. The same few lines, built
# twice: libc only, and with libcrypto as a DT_NEEDED (the control: there the copy must be
# mapped by the time main runs). Each prints how many of its mappings are the backend's.
cat >"$d/maps.c" <<'EOF2'
#include <stdio.h>
#include <string.h>
int main(void)
{
    char line[4096];
    int n = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    while (f && fgets(line, sizeof(line), f))
        n += strstr(line, "tlsmeter-backend") != NULL;
    printf("%d\n", n);
    return 0;
}
EOF2
if under_qemu; then
    skip "core-noossl backend: host-built programs (the hw backend is tested under qemu by reroute-*)"
elif ! cc -o "$d/maps-plain" "$d/maps.c" ||
    ! cc -o "$d/maps-crypto" "$d/maps.c" -Wl,--no-as-needed -lcrypto; then
    fail "core-noossl backend: cannot build the maps programs"
else
    TLS_ENV=(TLSMETER_CRYPTO=hw)
    tls_run "$d/maps-plain" "$d/hw.%p.trace" "$d/maps-plain"
    tls_run "$d/maps-crypto" "$d/hw.%p.trace" "$d/maps-crypto"
    TLS_ENV=()
    plain=$(cat "$d/maps-plain.out") crypto=$(cat "$d/maps-crypto.out")
    if [ "$plain" != 0 ]; then
        fail "core-noossl backend: a libc-only program got the backend copy ($plain mappings)"
    elif [ "${crypto:-0}" -lt 1 ]; then
        fail "core-noossl backend: the libcrypto program shows no backend mapping ('$crypto'): the check sees nothing"
    else
        pass "core-noossl backend: TLSMETER_CRYPTO=hw maps no copy into a libc-only program ($crypto mappings where libcrypto is loaded)"
    fi
fi
