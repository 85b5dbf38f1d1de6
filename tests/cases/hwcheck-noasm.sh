#!/usr/bin/env bash
# hwcheck-noasm: scripts/tlsmeter-hwcheck on real OpenSSL builds without assembly, the vendor
# mistake tlsmeter exists for. Debian's own OpenSSL source configured no-asm (scripts/openssl-noasm,
# cached) is linked into a vendor SDK (hidden, --exclude-libs, one copy stripped) for x86_64 and,
# cross-built, aarch64: each is software-only and "built without assembly", from what the file holds
# (no perlasm banner, no CPUINFO capability string, no AES/GHASH instructions, C T-table AES), and
# --require-hw rejects it. A copy whose build string says `platform: Linux` (the same-length edit of
# the archive's cversion object) is explained as a Configure target of the vendor's own. The system
# libcrypto is `assembly yes` and accepted. The gate judges TLS libraries: /usr/bin/curl (--deps)
# and a running process linking libcurl pass although libk5crypto carries its own software AES,
# which is reported as "other AES code, not TLS"; --any-aes restores the judge-everything gate.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"

d=$(case_dir)
HW=$TLSM_TOP/scripts/tlsmeter-hwcheck
NOASM=$TLSM_TOP/scripts/openssl-noasm
sleeper=""
trap '[ -n "$sleeper" ] && kill "$sleeper" 2>/dev/null' EXIT

"$TLSM_TOP/scripts/install-deps" --extra "binutils-aarch64-linux-gnu gcc-aarch64-linux-gnu shellcheck curl" \
    >"$d/deps.log" 2>&1 || echo "install-deps failed, see $d/deps.log (parts will skip)"

# j FILE SUFFIX EXPR: a Python expression over the JSON document d in FILE, with l the
# "libraries" entry whose path ends with SUFFIX (None when SUFFIX is empty or matches none).
j() {
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
l = next((x for x in d.get("libraries", []) if sys.argv[2] and x["path"].endswith(sys.argv[2])), None)
print(eval(sys.argv[3]))' "$@"
}
# run NAME ARGS...: run the script, keep stdout/stderr/exit code as $d/NAME.{out,err,rc}.
run() {
    local name=$1
    shift
    "$HW" "$@" >"$d/$name.out" 2>"$d/$name.err"
    echo $? >"$d/$name.rc"
}
rc_of() { cat "$d/$1.rc"; }

if command -v shellcheck >/dev/null; then
    check "hwcheck-noasm shellcheck: tlsmeter-hwcheck and this case are clean" \
        bash -c "cd '$TLSM_TOP' && shellcheck -x scripts/tlsmeter-hwcheck tests/cases/hwcheck-noasm.sh"
else
    skip "hwcheck-noasm shellcheck: shellcheck not installed and could not be installed"
fi

# The vendor SDK: OpenSSL's TLS and EVP AES-GCM used from one exported function each, its
# libssl.a/libcrypto.a hidden inside (as the vendor library of the OTA case).
cat >"$d/sdk.c" <<'EOF'
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#define API __attribute__((visibility("default")))
API int sdk_seal(unsigned char *buf, int len)
{
    static const unsigned char key[16], iv[12];
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int n = 0;
    EVP_EncryptInit_ex(c, EVP_aes_128_gcm(), NULL, key, iv);
    EVP_EncryptUpdate(c, buf, &n, buf, len);
    EVP_CIPHER_CTX_free(c);
    return n;
}
API void *sdk_ctx(void) { return SSL_CTX_new(TLS_client_method()); }
API const char *sdk_platform(void) { return OpenSSL_version(OPENSSL_PLATFORM); }
EOF

# platform_copy LIBCRYPTO.A OUT.A NEWNAME: a copy of the archive whose cversion object says
# "platform: NEWNAME": the same-length edit (NUL padded) of the string OpenSSL_version keeps.
platform_copy() {
    local w=$d/pc.$$
    rm -rf "$w" && mkdir -p "$w" && cp "$1" "$2" && (cd "$w" && ar x "$2" libcrypto-lib-cversion.o) &&
        python3 - "$w/libcrypto-lib-cversion.o" "$3" <<'EOF' && ar r "$2" "$w/libcrypto-lib-cversion.o"
import re, sys
p, name = sys.argv[1], sys.argv[2].encode()
b = open(p, "rb").read()
old = re.findall(rb"platform: [^\0]+\0", b)
assert len(old) == 1, "%d platform strings in %s" % (len(old), p)
new = (b"platform: " + name).ljust(len(old[0]), b"\0")
assert len(new) == len(old[0]), "platform name longer than %r" % old[0]
open(p, "wb").write(b.replace(old[0], new))
EOF
}

# noasm_case ARCH CC CFLAGS...: build the SDK from the no-asm OpenSSL for ARCH, check hwcheck on it.
sys=$(ldconfig -p | awk '/libcrypto\.so\.3 .*x86-64/ { print $NF; exit }')
[ -n "$sys" ] || sys=/usr/lib/x86_64-linux-gnu/libcrypto.so.3
noasm_case() {
    local arch=$1 cc=$2 ossl rc w target
    shift 2
    local extra=("$@")
    if [ ! -x "$NOASM" ]; then
        skip "hwcheck-noasm $arch: no scripts/openssl-noasm in this tree to build OpenSSL without assembly"
        return
    fi
    if ! command -v "$cc" >/dev/null; then
        skip "hwcheck-noasm $arch: no $cc"
        return
    fi
    ossl=$("$NOASM" bookworm "$arch" 2>"$d/noasm-$arch.log")
    rc=$?
    if [ "$rc" = 3 ]; then
        skip "hwcheck-noasm $arch: OpenSSL's source cannot be fetched or built here: $(tail -n 1 "$d/noasm-$arch.log")"
        return
    elif [ "$rc" != 0 ] || [ ! -f "$ossl/lib/libcrypto.a" ]; then
        fail "hwcheck-noasm $arch: scripts/openssl-noasm failed (exit $rc): $(tail -n 3 "$d/noasm-$arch.log" | tr '\n' ' ')"
        return
    fi
    w=$d/$arch
    mkdir -p "$w/plain" "$w/stripped" "$w/linux"
    link() { # OUT LIBCRYPTO.A: the SDK, with this architecture's compiler flags (extra)
        "$cc" -O2 -fPIC -shared -fvisibility=hidden "${extra[@]}" -I"$ossl/include" -o "$1" "$d/sdk.c" \
            "$ossl/lib/libssl.a" "$2" -Wl,--exclude-libs,ALL -lpthread 2>>"$w/build.log"
    }
    if ! link "$w/plain/libvendor.so" "$ossl/lib/libcrypto.a" "$@" ||
        ! link "$w/stripped/libvendor.so" "$ossl/lib/libcrypto.a" "$@" ||
        ! "${cc%gcc}strip" --strip-all "$w/stripped/libvendor.so"; then
        fail "hwcheck-noasm $arch: the vendor SDK does not link: $(tail -n 3 "$w/build.log" | tr '\n' ' ')"
        return
    fi
    target=$(strings -a "$ossl/lib/libcrypto.a" | sed -n 's/^platform: //p' | head -n 1)

    run "plain-$arch" --json --require-hw "$w/plain/libvendor.so"
    check "hwcheck-noasm $arch SDK: software-only, 0 AES/GHASH instructions, --require-hw exits 1" \
        test "$(j "$d/plain-$arch.out" plain/libvendor.so "(l['verdict'], l['aes_insns'], l['ghash_insns'], l['role'])")/$(rc_of "plain-$arch")" = \
        "('software-only', 0, 0, 'openssl')/1"
    check "hwcheck-noasm $arch SDK: built without assembly (asm no), AES_encrypt is C T-table code" \
        test "$(j "$d/plain-$arch.out" plain/libvendor.so "(l['built_without_asm'], l['asm'], (l['c_aes'] or '').startswith('C T-table AES_encrypt'))")" = \
        "(True, 'no', True)"
    check "hwcheck-noasm $arch SDK: evidence names platform $target, no perlasm banner, no CPUID capability string" \
        test "$(j "$d/plain-$arch.out" plain/libvendor.so "(l['platform'], l['cryptogams'], l['cpuinfo'], any('no perlasm module banner' in e for e in l['asm_evidence']))")" = \
        "('$target', 0, 'no-cap', True)"
    run "plaintext-$arch" --require-hw "$w/plain/libvendor.so"
    check "hwcheck-noasm $arch SDK text: 'assembly  none: built without assembly', gate REJECTED naming it" \
        bash -c "grep -q '^  assembly  *none: built without assembly\$' '$d/plaintext-$arch.out' &&
            grep -q '^require-hw: REJECTED: software-only: .*plain/libvendor.so' '$d/plaintext-$arch.out'"

    run "stripped-$arch" --json --require-hw "$w/stripped/libvendor.so"
    "$HW" --json "$w/stripped/libvendor.so" >"$d/stripped-$arch.json" 2>&1
    check "hwcheck-noasm $arch stripped SDK: no symbols left, still built without assembly (C T-tables addressed from code)" \
        test "$(j "$d/stripped-$arch.out" stripped/libvendor.so "(l['sw_defined'], l['verdict'], l['built_without_asm'], (l['c_aes'] or '').startswith('C T-tables Te0..Te3 (addressed by'))")/$(rc_of "stripped-$arch")" = \
        "([], 'software-only', True, True)/1"

    # A board's userland (busybox shell and tools, no grep -P: the tables are found in od's dump).
    if [ "$arch" = x86_64 ] && command -v busybox >/dev/null; then
        mkdir -p "$d/bb"
        for t in sh awk od grep sed tr md5sum wc cut mktemp sort head tail cat basename dirname uname rm mv; do
            ln -sf "$(command -v busybox)" "$d/bb/$t"
        done
        for t in objdump readelf strings; do ln -sf "$(command -v $t)" "$d/bb/$t"; done
        PATH=$d/bb "$d/bb/sh" "$HW" --json "$w/stripped/libvendor.so" >"$d/bb.json" 2>"$d/bb.err"
        check "hwcheck-noasm x86_64 stripped SDK under busybox sh + tools: same JSON as with GNU tools" \
            cmp "$d/bb.json" "$d/stripped-$arch.json"
    fi

    # The seed's literal `platform: Linux`: what it means is said, and the copy is still no-asm.
    if ! platform_copy "$ossl/lib/libcrypto.a" "$w/linux/libcrypto.a" Linux 2>>"$w/build.log" ||
        ! link "$w/linux/libfoundation.so" "$w/linux/libcrypto.a"; then
        fail "hwcheck-noasm $arch platform: Linux copy: $(tail -n 3 "$w/build.log" | tr '\n' ' ')"
        return
    fi
    run "linux-$arch" --json --require-hw "$w/linux/libfoundation.so"
    check "hwcheck-noasm $arch 'platform: Linux' copy: platform Linux, built without assembly, --require-hw exits 1" \
        test "$(j "$d/linux-$arch.out" libfoundation.so "(l['platform'], l['built_without_asm'], l['verdict'])")/$(rc_of "linux-$arch")" = \
        "('Linux', True, 'software-only')/1"
    check "hwcheck-noasm $arch 'platform: Linux' copy: says the vendor gave Configure a target of its own, so no asm modules were built" \
        test "$(j "$d/linux-$arch.out" libfoundation.so "any('not an OpenSSL Configure target: the vendor gave Configure a target of its own' in w and 'no AES/GHASH assembly was built' in w for w in l['warnings']) and any('not an OpenSSL Configure target' in e for e in l['asm_evidence'])")" = True
}

# --- x86_64: against the system libcrypto, which has its assembly --------------------------------
run sys --json --require-hw "$sys"
check "hwcheck-noasm system libcrypto: assembly yes (perlasm banners, CPUINFO OPENSSL_ia32cap), not built_without_asm, accepted" \
    test "$(j "$d/sys.out" "$(basename "$sys")" "(l['asm'], l['built_without_asm'], l['cryptogams'] > 0, l['cpuinfo'], l['role'])")/$(rc_of sys)" = \
    "('yes', False, True, 'OPENSSL_ia32cap', 'openssl')/0"
noasm_case x86_64 gcc

# --- aarch64: cross-built against the test sysroot ------------------------------------------------
if command -v aarch64-linux-gnu-gcc >/dev/null && command -v aarch64-linux-gnu-objdump >/dev/null; then
    SYSROOT=${SYSROOT:-$O/sysroot-aarch64}
    export SYSROOT
    if "$TLSM_TOP/scripts/aarch64-sysroot" "$SYSROOT" >"$d/sysroot.log" 2>&1; then
        noasm_case aarch64 aarch64-linux-gnu-gcc --sysroot="$SYSROOT" -I"$SYSROOT/usr/include/aarch64-linux-gnu"
    else
        skip "hwcheck-noasm aarch64: no arm64 sysroot ($(tail -n 1 "$d/sysroot.log"))"
    fi
else
    skip "hwcheck-noasm aarch64: no aarch64-linux-gnu-gcc/objdump (gcc-aarch64-linux-gnu, binutils-aarch64-linux-gnu)"
fi

# --- the gate on programs that link libcurl ---------------------------------------------------------
k5=$(ldconfig -p | awk '/libk5crypto\.so\.3 .*x86-64/ { print $NF; exit }')
if ! command -v curl >/dev/null || ! ldd "$(command -v curl)" | grep -q libk5crypto; then
    skip "hwcheck-noasm curl: no curl linking libk5crypto (Debian's libcurl) here"
else
    curl=$(command -v curl)
    run k5 --json --require-hw "$k5" "$sys"
    check "hwcheck-noasm libk5crypto: software-only, role other (no OpenSSL or TLS code); with libcrypto: accepted" \
        test "$(j "$d/k5.out" libk5crypto.so.3 "(l['verdict'], l['role'])")/$(rc_of k5)" = "('software-only', 'other')/0"
    run curl --require-hw --deps "$curl"
    check "hwcheck-noasm --require-hw --deps $curl: accepted, libk5crypto listed as other AES code, not TLS" \
        bash -c "test $(rc_of curl) = 0 && grep -q '^require-hw: accepted (.*other AES code, not TLS, not judged: .*libk5crypto' '$d/curl.out'"
    run curlany --require-hw --any-aes --deps "$curl"
    check "hwcheck-noasm --require-hw --any-aes --deps $curl: the judge-everything gate rejects libk5crypto" \
        bash -c "test $(rc_of curlany) = 1 && grep -q '^require-hw: REJECTED: software-only: .*libk5crypto' '$d/curlany.out'"
    run curlalone --require-hw "$curl"
    check "hwcheck-noasm --require-hw $curl without --deps: rejected, says no TLS library was among the files" \
        bash -c "test $(rc_of curlalone) = 1 && grep -q 'REJECTED: no OpenSSL copy or other TLS library among the files' '$d/curlalone.out'"

    # A live process linking libcurl: curl waiting on its standard input.
    sleep 60 | "$curl" -s -T - file:///dev/null &
    sleeper=$!
    for _ in $(seq 50); do grep -q libk5crypto "/proc/$sleeper/maps" 2>/dev/null && break; sleep 0.1; done
    run pid --json --require-hw --pid "$sleeper"
    check "hwcheck-noasm --pid curl: accepted; libcrypto openssl/hardware, libk5crypto other/software-only" \
        test "$(j "$d/pid.out" "" "' '.join(sorted(x['role'] + '/' + x['verdict'] for x in d['libraries'] if '/libk5crypto.so' in x['path'] or '/libcrypto.so' in x['path'])) + ' ' + str(d['require_hw']['accepted'])")/$(rc_of pid)" = \
        "openssl/hardware other/software-only True/0"
    kill "$sleeper" 2>/dev/null
    wait "$sleeper" 2>/dev/null
    sleeper=""

    # The same with the no-asm vendor SDK in the process: rejected, naming the SDK.
    if [ -f "$d/x86_64/stripped/libvendor.so" ]; then
        sleep 60 | LD_PRELOAD=$d/x86_64/stripped/libvendor.so "$curl" -s -T - file:///dev/null &
        sleeper=$!
        for _ in $(seq 50); do grep -q libvendor "/proc/$sleeper/maps" 2>/dev/null && break; sleep 0.1; done
        run pidv --require-hw --pid "$sleeper"
        check "hwcheck-noasm --pid curl + no-asm SDK: rejected, naming the SDK, not libk5crypto" \
            bash -c "test $(rc_of pidv) = 1 && grep -q '^require-hw: REJECTED: software-only: [^ ]*/stripped/libvendor.so\$' '$d/pidv.out'"
        kill "$sleeper" 2>/dev/null
        wait "$sleeper" 2>/dev/null
        sleeper=""
    fi
fi

# --- bad input to the new options ---------------------------------------------------------------
run anyalone --any-aes "$sys"
check "hwcheck-noasm --any-aes without --require-hw: exit 2, says why" \
    test "$(rc_of anyalone)" = 2 -a -n "$(grep -- '--any-aes only changes what --require-hw judges' "$d/anyalone.err")"
run rootalone --sysroot /nonexistent "$sys"
check "hwcheck-noasm --sysroot without --deps: exit 2" test "$(rc_of rootalone)" = 2
mkdir -p "$d/needs"
echo 'int f(void) { return 1; }' >"$d/needs/gone.c"
echo 'int f(void); int g(void) { return f(); }' >"$d/needs/user.c"
if gcc -shared -fPIC -o "$d/needs/libgone.so" "$d/needs/gone.c" &&
    gcc -shared -fPIC -o "$d/needs/libuser.so" "$d/needs/user.c" -L"$d/needs" -lgone; then
    rm -f "$d/needs/libgone.so"
    run gone --deps "$d/needs/libuser.so"
    check "hwcheck-noasm --deps with a library that resolves nowhere: exit 3 naming it and its user" \
        test "$(rc_of gone)" = 3 -a -n "$(grep 'libuser.so: needs libgone.so, found in no library directory' "$d/gone.err")"
fi
grep -q '^FAIL hwcheck-noasm' "$TLSM_RESULTS" || rm -rf "$d"
