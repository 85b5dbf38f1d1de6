#!/usr/bin/env bash
# safe-entry-static: the SSL_read, SSL_peek and SSL_write of OpenSSL copies built from
# Debian's own libssl.a must be patched, not refused by the prologue decoder. Debian builds
# OpenSSL with -fstack-protector-strong: these functions load the stack-protector canary,
# `mov %fs:0x28,%rax` (64 48 8b 04 25 28 00 00 00), among their first instructions, the ones
# an entry patch moves to the trampoline (an absolute %fs-relative load: safe to move as it
# is). Two copies: a -Bsymbolic library (tests/vendor/build, layout "symbolic") and an
# -rdynamic program with libssl.a and libcrypto.a linked in (vclient.c + vendor.c, built
# here), each downloading 2 MiB from openssl s_server. objdump must show the load starting
# within SSL_read's first 5 bytes (the bytes an x86_64 entry patch replaces), else the case
# skips. Traced: output and exit code as untraced, no notice leaving SSL_read, SSL_peek or
# SSL_write alone, read events, and the bytes they returned equal to what the server sent
# (body + HTTP header, the header's length measured with an untraced s_client).
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload safe-entry-static
if [ "${TLSM_ARCH:-$(uname -m)}" != x86_64 ]; then
    skip "safe-entry-static: x86_64's stack-protector load (%fs:0x28), not $(target_arch)'s"
    exit 0
fi
V=$O/vendor
if ! out=$(VENDOR_ONLY=symbolic "$TLSM_TOP/tests/vendor/build" "$V" 2>&1); then
    if echo "$out" | grep -q 'libssl-dev'; then
        skip "safe-entry-static: $out"
    else
        fail "safe-entry-static: vendor fixture did not build: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
    fi
    exit 0
fi
# The -rdynamic program: OpenSSL's objects linked into a PIE that exports every symbol, so its
# own calls to SSL_read are direct (no PLT) while its dynamic symbols name them.
libdir=/usr/lib/$(${CC:-cc} -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
if ! ${CC:-cc} -O2 -g -fPIC -Wall -rdynamic -o "$d/vclient-rdynamic" \
    "$TLSM_TOP/tests/vendor/vclient.c" "$TLSM_TOP/tests/vendor/vendor.c" \
    "$libdir/libssl.a" "$libdir/libcrypto.a" -ldl -lpthread 2>"$d/cc.err"; then
    fail "safe-entry-static: the -rdynamic program does not build: $(head -c 300 "$d/cc.err")"
    exit 0
fi

SIZE=$((2 * 1024 * 1024 + 3))
tls_make_file big.bin "$SIZE"
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "safe-entry-static: openssl s_server did not start"
    exit 0
fi
# What s_server sends besides the body: its HTTP header, the same for every GET of the file.
tls_client sclient "$TLS_PORT" big.bin "$d/sclient"
header=$(($(cat "$d/sclient.got") - $(tls_size "$d/sclient.body")))
if [ "$(cat "$d/sclient.rc")" != 0 ] || [ "$(tls_size "$d/sclient.body")" != "$SIZE" ] ||
    [ "$header" -le 0 ]; then
    fail "safe-entry-static: untraced s_client download failed (exit $(cat "$d/sclient.rc")," \
        "body $(tls_size "$d/sclient.body") bytes): $(head -c 300 "$d/sclient.err")"
    exit 0
fi

# canary_at OBJ FN: the offset in FN of the first stack-protector load within its first 5
# bytes, empty when there is none there.
canary_at() {
    local line base='' a
    while IFS= read -r line; do
        if [[ $line =~ ^([0-9a-f]+)\ \<$2\>:$ ]]; then
            base=$((16#${BASH_REMATCH[1]}))
            continue
        fi
        [ -n "$base" ] || continue
        [[ $line =~ ^\ *([0-9a-f]+):$'\t'(.*)$ ]] || continue
        a=$((16#${BASH_REMATCH[1]} - base))
        [ "$a" -ge 5 ] && return
        if [[ ${BASH_REMATCH[2]} == "64 48 8b 04 25 28 00 "*"%fs:0x28,%rax"* ]]; then
            echo "$a"
            return
        fi
    done < <(objdump -d --disassemble="$2" "$1" 2>/dev/null)
}

# run NAME OBJ PROG: the checks above for the copy OBJ downloading through PROG.
run() {
    local name=$1 obj=$2 prog=$3 p=$d/$1 at fn why
    at=$(canary_at "$obj" SSL_read)
    if [ -z "$at" ]; then
        skip "safe-entry-static $name: SSL_read in $obj does not load the stack protector" \
            "(mov %fs:0x28,%rax) within its first 5 bytes: $(objdump -d --disassemble=SSL_read \
                "$obj" 2>/dev/null | grep -A3 '<SSL_read>:' | tail -n 3 | tr -s '\t ' ' ')"
        return
    fi
    local fns=SSL_read
    for fn in SSL_peek SSL_write; do
        [ -n "$(canary_at "$obj" "$fn")" ] && fns="$fns $fn"
    done
    tls_run "$p.plain" "" "$prog" -p "$TLS_PORT" -c "$TLS_CERT" -f big.bin
    tls_run "$p.traced" "$p.%p.jsonl" "$prog" -p "$TLS_PORT" -c "$TLS_CERT" -f big.bin
    if [ "$(cat "$p.plain.rc")" != 0 ] || ! grep -q "^vendor bytes=$SIZE " "$p.plain.out"; then
        fail "safe-entry-static $name: the untraced run failed (exit $(cat "$p.plain.rc")):" \
            "$(head -c 300 "$p.plain.err")"
        return
    fi
    if ! why=$(tls_same_run x "$p.plain" "$p.traced"); then
        fail "safe-entry-static $name: $why"
        return
    fi
    local refused=
    for fn in $fns; do
        grep '^tlsmeter: .*entry points left alone' "$p.traced.err" | grep -qE "[ :]$fn \\(" &&
            refused="$refused $fn"
    done
    if [ -n "$refused" ]; then
        fail "safe-entry-static $name: left alone:$refused: $(grep '^tlsmeter:' "$p.traced.err" | head -c 400)"
    else
        pass "safe-entry-static $name: no notice leaving $fns alone"
    fi
    tls_traces "$p.*.jsonl"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "safe-entry-static $name: ${#TRACES[@]} traces, want 1"
        return
    fi
    TLS_PASS_NOTE="$fns load the canary at +$at" \
        tls_check "safe-entry-static $name: output as untraced, reads return body and header" \
        "$TLSM_PY" - "${TRACES[0]}" "$SIZE" "$header" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
size, header = int(sys.argv[2]), int(sys.argv[3])
reads = [e for e in ev if e["ev"] == "read"]
assert reads, "no read events"
got = sum(e["got"] for e in reads if e["got"] > 0)
assert got == size + header, "reads returned %d bytes, want %d (body %d + header %d)" % (
    got, size + header, size, header)
print("ok %d reads, %d bytes" % (len(reads), got))
PY
}

run symbolic "$V/symbolic/libvendor.so" "$V/symbolic/vclient"
run rdynamic "$d/vclient-rdynamic" "$d/vclient-rdynamic"
