#!/usr/bin/env bash
# core-run-library: libtlsmeter.so run as a program (someone tries `./libtlsmeter.so`, as one
# can run glibc's libc.so.6) says what it is and how to use it, and exits 0. Without a
# PT_INTERP and an entry point the kernel jumped into the library's first bytes and it died
# of SIGSEGV. Running it must not start the preload (its constructor would read TLSMETER_*).
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
d=$(case_dir)
lib=$O/libtlsmeter.so
if [ ! -f "$lib" ]; then
    fail "core-run-library: $lib is not built"
    exit 0
fi
version=$(sed -n 's/^VERSION := //p' "$TLSM_TOP/Makefile")

# The reproduction: run the library itself; it used to exit 139 with nothing printed.
run_target TLSMETER_HELP=1 "$lib" >"$d/out" 2>"$d/err"
rc=$?
lines=$(wc -l <"$d/out")
if [ "$rc" -eq 0 ] &&
    [ "$(head -n 1 "$d/out")" = "tlsmeter $version: the LD_PRELOAD library of tlsmeter" ] &&
    grep -q 'LD_PRELOAD=.*libtlsmeter.so PROGRAM' "$d/out" &&
    grep -q 'tlsmeter record -- PROGRAM' "$d/out" && [ "$lines" -ge 4 ] && [ "$lines" -le 6 ]; then
    pass "core-run-library prints its version and usage, exit 0"
else
    fail "core-run-library: exit $rc, $lines lines: $(head -c 300 "$d/out") $(head -c 200 "$d/err")"
fi
# TLSMETER_HELP=1 above: the constructor would have printed the settings table on stderr.
if grep -q 'tlsmeter settings' "$d/err"; then
    fail "core-run-library: running the library started the preload: $(head -c 200 "$d/err")"
else
    pass "core-run-library does not start the preload"
fi

# Preloaded, it is the library it was: the constructor runs (TLSMETER_HELP prints the table).
# (openssl: the one program an aarch64 sysroot has for qemu to run.)
# (TLSM_PRELOAD: under SAN the sanitizer runtimes come first, as ASan requires.)
run_target TLSMETER_HELP=1 LD_PRELOAD="${TLSM_PRELOAD:-$lib}" openssl version >"$d/pre.out" 2>"$d/pre.err"
rc=$?
if [ "$rc" -eq 0 ] && grep -q 'tlsmeter settings' "$d/pre.err" && grep -q '^OpenSSL' "$d/pre.out"; then
    pass "core-run-library preloaded as before"
else
    fail "core-run-library preloaded: exit $rc: $(head -c 300 "$d/pre.err")"
fi
rm -rf "$d"
