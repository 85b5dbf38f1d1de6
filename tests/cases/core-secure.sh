#!/usr/bin/env bash
# core-secure: secure execution (AT_SECURE: a setuid program run by another user) gets no trace.
#
# What is tested, and how: a copy of tests/progs/suidprobe is made setuid root and run as
# `nobody` (uid != euid, so the kernel sets AT_SECURE). suidprobe reports whether a tlsmeter
# object is mapped and AT_SECURE, then does a TLS download.
#  - control:  the same program, not setuid, run as nobody with LD_PRELOAD: must be traced
#              (proves the output location is writable, so silence below means something).
#  - slash:    setuid, LD_PRELOAD=/path/libtlsmeter.so: ld.so ignores preload paths with a
#              slash in secure mode; nothing may be written.
#  - trusted:  setuid, the library copied setuid into the system library directory and named
#              without a slash, which ld.so does load in secure mode: the preload itself must
#              notice AT_SECURE and write nothing (no trace in TLSMETER_OUT, none in the cwd).
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload core-secure

if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
    skip "core-secure: needs root and setpriv (to make a setuid program and run it as nobody)"
    exit 0
fi
tls_make_file f.bin 100003
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "core-secure: openssl s_server did not start"
    exit 0
fi
# Everything nobody runs or reads lives where nobody can reach it.
tls_nobody_dir "$TLSM_PROGS/suidprobe"
s=$TLS_NB_DIR/suid
mkdir -p "$s/out" && chmod 0755 "$s" && chmod 1777 "$s/out"
mv "$TLS_NB_DIR/suidprobe" "$s/probe"
install -m 4755 -o root -g root "$TLSM_PROGS/suidprobe" "$s/suidprobe"
if findmnt -n -o OPTIONS -T "$s" 2>/dev/null | grep -qw nosuid; then
    skip "core-secure: $s is on a nosuid mount, so no setuid run is possible there"
    exit 0
fi
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)

# run_probe NAME PRELOAD PROG: run PROG as nobody in $s/out with LD_PRELOAD=PRELOAD.
run_probe() {
    local p=$d/$1
    (cd "$s/out" && timeout -k 5 60 "${NOBODY[@]}" env LD_PRELOAD="$2" \
        TLSMETER_OUT="$s/out/$1.%p.jsonl" "$3" "$TLS_PORT" "$TLS_NB_CERT" /f.bin \
        >"$p.out" 2>"$p.err")
    echo $? >"$p.rc"
}

# written NAME: files the run left in the output dir (named or default template).
written() {
    (cd "$s/out" && ls -- "$1".* tlsmeter.* 2>/dev/null)
}

lib=${TLSM_PRELOAD##*:}
run_probe control "$TLS_NB_PRELOAD" "$s/probe"
if ! grep -q 'preload=loaded secure=0' "$d/control.out" || [ "$(cat "$d/control.rc")" != 0 ]; then
    fail "core-secure control: probe as nobody: $(head -c 200 "$d/control.out" "$d/control.err")"
elif [ -z "$(written control)" ]; then
    fail "core-secure control: no trace from a normal run as nobody, so the test cannot tell"
else
    pass "core-secure control (nobody, not setuid: traced)"
fi

run_probe slash "$TLS_NB_PRELOAD" "$s/suidprobe"
if ! grep -q 'secure=1' "$d/slash.out" || [ "$(cat "$d/slash.rc")" != 0 ]; then
    fail "core-secure slash: setuid probe did not run securely: $(head -c 200 "$d/slash.out")"
elif [ -n "$(written slash)" ]; then
    fail "core-secure slash: trace written in secure mode: $(written slash)"
else
    pass "core-secure slash (ld.so $(grep -o 'preload=[a-z]*' "$d/slash.out"), nothing written)"
fi

if [ -n "${TLSM_SAN:-}" ]; then
    skip "core-secure trusted: a sanitizer build cannot load without its runtime in secure mode"
    exit 0
fi
libdir=/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
name=libtlsmeter-secure-test-$$.so
# Removed on exit: a setuid library in a system directory must not outlive the test.
TLS_EXTRA_CLEANUP="rm -f '$libdir/$name'"
install -m 4755 -o root -g root "$lib" "$libdir/$name"
run_probe trusted "$name" "$s/suidprobe"
rm -f "${libdir:?}/$name"
if ! grep -q 'preload=loaded secure=1' "$d/trusted.out"; then
    fail "core-secure trusted: ld.so did not load $name in secure mode:" \
        "$(head -c 200 "$d/trusted.out" "$d/trusted.err")"
elif [ "$(cat "$d/trusted.rc")" != 0 ] || ! grep -q '^got=100048 ' "$d/trusted.out"; then
    fail "core-secure trusted: the setuid program failed with the preload loaded:" \
        "$(head -c 200 "$d/trusted.err")"
elif [ -n "$(written trusted)" ]; then
    fail "core-secure trusted: the preload wrote in secure mode: $(written trusted)"
else
    pass "core-secure trusted (preload loaded, AT_SECURE=1, nothing written)"
fi
