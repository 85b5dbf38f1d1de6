#!/usr/bin/env bash
# dist-glibc: what `make dist` promises about glibc. (1) The dist library asks for
# no glibc symbol version past 2.28, and the check that says so does fail on a library that
# does (the host build, made on glibc 2.36). (2) On Debian 11's glibc 2.31 the dist library
# loads and the program runs unchanged, while the host build stops the program before main
# (the loader's "version `GLIBC_2.3x' not found", README "Supported systems"). (3) The
# _dl_find_object fallback (preload/glibc_compat.c) gives glibc's own answers: checked
# against _dl_find_object on this host and against dladdr1 on glibc 2.31.
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=tests/lib-bullseye.sh
. "$TLSM_TOP/tests/lib-bullseye.sh"
d=$(case_dir)
tls_init "$d"
N=dist-glibc
tls_need_preload "$N"
bz_setup "$N" "$(target_arch)"
HOSTLIB=${TLSM_PRELOAD##*:}
cross=
[ "$BZ_ARCH" = aarch64 ] && cross=aarch64-linux-gnu-
SYMS=$TLSM_TOP/scripts/check-glibc-symbols

# (1) symbol versions.
check "$N dist library needs glibc <= 2.28" "$SYMS" --objdump "${cross}objdump" 2.28 "$BZ_LIB"
if out=$("$SYMS" --objdump "${cross}objdump" 2.31 "$HOSTLIB" 2>&1); then
    fail "$N: the check passes the host build, which needs a newer glibc: $out"
elif echo "$out" | grep -q 'needs GLIBC_2\.3[2-9]'; then
    pass "$N the check names what the host build needs past 2.31: $(echo "$out" | grep -c needs) symbols, e.g. $(echo "$out" | grep "needs GLIBC" | head -n 2 | sed "s/^ *//" | tr '\n' ' ')"
else
    fail "$N: the check failed on the host build without naming a symbol: $(echo "$out" | head -c 300)"
fi

# (2) Debian 11: the dist library loads, the host build does not.
bz_cmd openssl version
"${BZ_CMD[@]}" >"$d/plain.out" 2>"$d/plain.err"
echo $? >"$d/plain.rc"
bz_cmd LD_PRELOAD="$BZ_LIB" TLSMETER_OUT="$d/dist.%p.jsonl" openssl version
"${BZ_CMD[@]}" >"$d/dist.out" 2>"$d/dist.err"
echo $? >"$d/dist.rc"
if [ "$(cat "$d/plain.rc")" != 0 ] || ! grep -q '^OpenSSL 1\.1\.1' "$d/plain.out"; then
    fail "$N: Debian 11's openssl version does not run: $(head -c 300 "$d/plain.err")"
elif ! why=$(tls_same_run x "$d/plain" "$d/dist"); then
    fail "$N dist library on glibc 2.31: $why"
else
    pass "$N dist library on glibc 2.31: openssl version runs, same output ($(cat "$d/dist.out"))"
fi
bz_cmd LD_PRELOAD="$HOSTLIB" openssl version
"${BZ_CMD[@]}" >"$d/host.out" 2>"$d/host.err"
rc=$?
if [ "$rc" != 0 ] && [ ! -s "$d/host.out" ] && grep -q "version \`GLIBC_2\.3[2-9]' not found" "$d/host.err"; then
    pass "$N host build on glibc 2.31 stops the program (as README says): exit $rc, no output, $(grep -c 'not found' "$d/host.err") loader lines: $(head -n 1 "$d/host.err" | sed 's/.*: version/version/')"
else
    fail "$N: the host build on glibc 2.31 did not fail as README says (exit $rc): $(head -c 300 "$d/host.err"); update README \"Supported systems\""
fi

# (3) the _dl_find_object fallback, built as the dist library is (against glibc 2.31).
cc=${cross}gcc
if ! $cc -std=gnu11 -Wall -Wextra -O2 -D_GNU_SOURCE --sysroot="$BZ_ROOT" \
    -I"$BZ_ROOT/usr/include/$BZ_TRIPLET" -I"$TLSM_TOP/preload" -o "$d/findobj" \
    "$TLSM_TOP/tests/unit/findobj.c" "$(find "$TLSM_TOP/preload" -name glibc_compat.c | head -n 1)" \
    -L"$BZ_ROOT/usr/lib/$BZ_TRIPLET" -ldl 2>"$d/findobj.cc.err"; then
    fail "$N findobj: does not build: $(head -c 300 "$d/findobj.cc.err")"
    exit 0
fi
# On this host (or the arm64 sysroot under qemu): glibc's own _dl_find_object is the judge.
lib=libz.so.1
if under_qemu; then
    out=$(timeout 60 qemu-aarch64-static -L "$TLSM_SYSROOT" "$d/findobj" "/lib/$BZ_TRIPLET/$lib" zlibVersion 2>&1)
else
    out=$(timeout 60 "$d/findobj" "/lib/$BZ_TRIPLET/$lib" zlibVersion 2>&1)
fi
if [[ $out == "ok "*"_dl_find_object)" ]]; then
    pass "$N findobj on this host's glibc: $out"
else
    fail "$N findobj on this host's glibc: $(echo "$out" | head -n 4 | tr '\n' ' ')"
fi
bz_cmd "$d/findobj" "$BZ_ROOT/lib/$BZ_TRIPLET/$lib" zlibVersion
[ "$BZ_ARCH" = aarch64 ] && bz_cmd "$d/findobj" "/lib/$BZ_TRIPLET/$lib" zlibVersion
out=$(timeout 60 "${BZ_CMD[@]}" 2>&1)
if [[ $out == "ok "*"dladdr1)" ]]; then
    pass "$N findobj on glibc 2.31: $out"
else
    fail "$N findobj on glibc 2.31: $(echo "$out" | head -n 4 | tr '\n' ' ')"
fi
