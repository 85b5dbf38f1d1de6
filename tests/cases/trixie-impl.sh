#!/usr/bin/env bash
# trixie-impl: on Debian 13's OpenSSL 3.5 the implementation is named from the code that ran,
# checked against the copy's own instructions and symbols, and a copy whose version was not
# verified is measured but never named.
#  x86_64 (the trixie userland of tests/run's matrix):
#   1. s_client natively, with AES-NI/PCLMULQDQ/SSSE3 hidden (3.5 still runs its VAES kernel)
#      and with VAES/VPCLMULQDQ/AVX512F hidden too (table): the libcrypto.so.3 impl event is
#      vaes-avx512/vpclmul-avx512 (where the CPU has AVX-512 F/DQ/BW/VL, VAES and VPCLMULQDQ;
#      else aesni/clmul-avx) and table/4bit; layout 3.5. Checked with objdump on the copy:
#      the kernel's cipherupdate calls a function with zmm vaesenc and vpclmulqdq; the table
#      block holds no AES, CLMUL or PSHUFB instruction. The analyzer's class and words agree.
#   2. A hidden, stripped vendor SDK over trixie's static libssl.a/libcrypto.a
#      (tests/vendor/trixie-build), reached only through its provider tables: its records are
#      measured and named the same way, and each offset resolves in the unstripped link to
#      vaes_gcm_cipherupdate, AES_encrypt, gcm_ghash_4bit.
#   3. The same SDK with its version text changed to 3.4.9 (a version whose layout nobody
#      verified): lib gcm_layout "unverified", its records measured, none named; the analyzer
#      names no code and says the version and "layout not verified".
#  aarch64 (the same userland under qemu): ARMv8 AES + PMULL, stitched, and the kernel the
#  copy's dispatch picks (aes_gcm_*_kernel; unroll8_eor3 with OPENSSL_armcap's UNROLL8_EOR3
#  bit set), checked against the guest code qemu translated (its -d in_asm log) at the
#  addresses of both kernels, found in the .so by the bytes of libcrypto.a's symbols.
# tlsm-arch: x86_64 aarch64
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
N=trixie-impl
if ! in_userland || [ "$TLSM_USERLAND" != trixie ]; then
    skip "$N: about Debian 13's OpenSSL 3.5: runs in the trixie userland of tests/run's matrix"
    exit 0
fi
d=$(case_dir)
tls_init "$d"
tls_need_preload "$N"
A=$O/tlsmeter-analyze
K=("$TLSM_PY" "$TLSM_TOP/tests/tools/kernelcheck.py")
ROOT=$TLSM_UL_ROOT
tls_make_file big.bin $((4 * 1024 * 1024 + 7))
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "$N: openssl s_server did not start"
    exit 0
fi

# jsonl TRACE_GLOB OUT: the one trace of a run as JSON Lines (the analyzer, on the host).
jsonl() {
    tls_traces "$1"
    [ "${#TRACES[@]}" -eq 1 ] && run_tool "$A" --jsonl "${TRACES[0]}" >"$2"
}

# detail TRACE_GLOB LIBSUFFIX: the analyzer's "native: CLASS (DETAIL)" line of that copy.
detail() {
    tls_traces "$1"
    run_tool "$A" "${TRACES[0]}" | awk -v s="$2" \
        'index($0, s) && /\[app\]/ {f = 1; next} f && /native: / {print; exit}'
}

# sclient TAG [VAR=VAL...]: a traced s_client download; sets J (its JSON Lines), "" on failure.
# QLOG=FILE: under qemu, FILE gets the guest code translated for the client (-d in_asm).
sclient() {
    local tag=$1 p=$d/sc.$1
    shift
    J=
    TLS_ENV=("$@")
    if [ -n "${QLOG:-}" ]; then # qemu logs the guest code it translates (the client only)
        TLS_KEEP_FORMAT=1 TLSM_RUNNER="$TLSM_RUNNER -d in_asm,nochain -D $QLOG" \
            tls_client sclient "$TLS_PORT" big.bin "$p" "$p.%p.trace"
    else
        tls_client sclient "$TLS_PORT" big.bin "$p" "$p.%p.trace"
    fi
    TLS_ENV=()
    if [ "$(cat "$p.rc")" != 0 ] || ! cmp -s "$p.body" "$TLS_WWW/big.bin"; then
        fail "$N $tag: s_client exit $(cat "$p.rc"), body differs: $(head -c 200 "$p.err")"
        return 1
    fi
    jsonl "$p.*.trace" "$p.jsonl" || {
        fail "$N $tag: want one trace"
        return 1
    }
    J=$p.jsonl
}

# The native 3.5 GCM kernel this CPU gets (ossl_vaes_vpclmulqdq_capable's bits).
flags=" $(grep -m1 '^flags' /proc/cpuinfo) "
vaes=1
for f in avx512f avx512dq avx512bw avx512vl vaes vpclmulqdq; do
    [[ $flags == *" $f "* ]] || vaes=
done

x86_64_part() {
    local so=$ROOT/usr/lib/x86_64-linux-gnu/libcrypto.so.3 tag e off why line bad
    local hw=(aesni clmul-avx "AES-NI") m_aesni="~0x200020200000000:~0x0"
    [ -n "$vaes" ] && hw=(vaes-avx512 vpclmul-avx512 "VAES (AVX-512)")
    for tag in native aesni-hidden table; do
        case $tag in
        native) sclient $tag || continue ;;
        aesni-hidden)
            if [ -z "$vaes" ]; then
                skip "$N $tag: no VAES/AVX-512 here: 3.5 then follows the AES-NI bit (trust-impl)"
                continue
            fi
            sclient $tag OPENSSL_ia32cap="$m_aesni" || continue
            ;;
        table) sclient $tag OPENSSL_ia32cap="~0x200020200000000:~0x60000010000" || continue ;;
        esac
        local want=("${hw[@]}")
        [ $tag = table ] && want=(table 4bit "table (AES_encrypt)")
        if ! e=$("${K[@]}" impl "$J" /libcrypto.so.3 "${want[0]}" "${want[1]}"); then
            fail "$N $tag: $e"
            continue
        fi
        bad=
        if [ "${want[0]}" = vaes-avx512 ]; then
            read -r -a off < <(echo "$e" | "$TLSM_PY" -c 'import json,sys; e=json.load(sys.stdin); print(e["fn_kernel_off"], e["fn_kernel_size"])')
            why=$("${K[@]}" evex "$so" "${off[@]}") || bad=1
        elif [ $tag = table ]; then
            read -r -a off < <(echo "$e" | "$TLSM_PY" -c 'import json,sys; e=json.load(sys.stdin); print(e["fn_block_off"], e["fn_block_size"])')
            why=$("${K[@]}" nosimd "$so" "${off[@]}") || bad=1
        else
            why="aesni named"
        fi
        if [ -n "$bad" ]; then
            fail "$N $tag: the copy's code disagrees: $why"
            continue
        fi
        line=$(detail "$d/sc.$tag.*.trace" /libcrypto.so.3)
        case $tag:$line in
        table:*"native: table ("*"table (AES_encrypt)"*"4-bit"*) ;;
        native:*"native: hardware ("*"${want[2]}"* | aesni-hidden:*"native: hardware ("*"${want[2]}"*) ;;
        *)
            fail "$N $tag: analyzer says: $line"
            continue
            ;;
        esac
        pass "$N $tag: libcrypto.so.3 ${want[0]}/${want[1]} ($why); analyzer:${line#*native:}"
    done
}

# vendor TAG DIR MODE [VAR=VAL...]: otaget (DIR) downloads the image through the SDK; sets J.
vendor() {
    local tag=$1 dir=$2 p=$d/v.$1
    shift 2
    J=
    TLS_ENV=("$@")
    tls_run "$p" "$p.%p.trace" "$dir/otaget" -p "$TLS_PORT" -c "$TLS_CERT" -m m.json -f big.bin
    TLS_ENV=()
    if [ "$(cat "$p.rc")" != 0 ] || ! grep -q "image bytes=$IMG sha256=$want_sha" "$p.out"; then
        fail "$N vendor $tag: exit $(cat "$p.rc"): $(head -c 300 "$p.out" "$p.err" | tr '\n' ' ')"
        return 1
    fi
    jsonl "$p.*.trace" "$p.jsonl" || {
        fail "$N vendor $tag: want one trace"
        return 1
    }
    J=$p.jsonl
}

vendor_part() {
    local V=$O/vendor-trixie out e off why line
    if ! out=$("$TLSM_TOP/tests/vendor/trixie-build" "$V" "$ROOT" 2>&1); then
        fail "$N vendor: fixtures did not build: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
        return
    fi
    IMG=$((4 * 1024 * 1024 + 7))
    want_sha=$(tls_sha "$TLS_WWW/big.bin")
    tls_make_file m.json 4096
    local hw=(aesni clmul-avx kernel aesni_gcm_initkey)
    [ -n "$vaes" ] && hw=(vaes-avx512 vpclmul-avx512 kernel vaes_gcm_cipherupdate)
    if vendor native "$V"; then
        if ! e=$("${K[@]}" impl "$J" /libfoundation.so "${hw[0]}" "${hw[1]}"); then
            fail "$N vendor native: $e"
        elif [ -z "$vaes" ]; then
            pass "$N vendor native: SDK copy named ${hw[0]}/${hw[1]}"
        else
            off=$(echo "$e" | "$TLSM_PY" -c 'import json,sys; print(json.load(sys.stdin)["fn_kernel_off"])')
            if why=$("${K[@]}" sym "$V/libfoundation.so.dbg" "$off" "${hw[3]}"); then
                line=$(detail "$d/v.native.*.trace" /libfoundation.so)
                if [[ $line == *"native: hardware ("*"VAES (AVX-512)"* ]]; then
                    pass "$N vendor native: SDK copy reached through its tables, ${hw[0]} ($why)"
                else
                    fail "$N vendor native: analyzer says: $line"
                fi
            else
                fail "$N vendor native: $why"
            fi
        fi
    fi
    if vendor table "$V" OPENSSL_ia32cap="~0x200020200000000:~0x60000010000"; then
        if ! e=$("${K[@]}" impl "$J" /libfoundation.so table 4bit); then
            fail "$N vendor table: $e"
        else
            read -r boff goff < <(echo "$e" | "$TLSM_PY" -c 'import json,sys; e=json.load(sys.stdin); print(e["fn_block_off"], e["fn_ghash_off"])')
            if why=$("${K[@]}" sym "$V/libfoundation.so.dbg" "$boff" AES_encrypt asm_AES_encrypt) &&
                why="$why, $("${K[@]}" sym "$V/libfoundation.so.dbg" "$goff" gcm_ghash_4bit)"; then
                pass "$N vendor table: SDK copy named table/4bit ($why)"
            else
                fail "$N vendor table: $why"
            fi
        fi
    fi
    # The same SDK reporting a version nobody verified (its only version text rewritten).
    local U=$d/v34
    mkdir -p "$U"
    cp "$V/otaget" "$U/"
    "$TLSM_PY" -c 'import sys
b = open(sys.argv[1], "rb").read()
assert b.count(b"OpenSSL 3.5.") == 1, b.count(b"OpenSSL 3.5.")
open(sys.argv[2], "wb").write(b.replace(b"OpenSSL 3.5.", b"OpenSSL 3.4."))' \
        "$V/libfoundation.so" "$U/libfoundation.so"
    if vendor unverified "$U"; then
        if ! why=$("${K[@]}" unread "$J" /libfoundation.so $((IMG / 16384))); then
            fail "$N vendor unverified: $why"
            return
        fi
        line=$(detail "$d/v.unverified.*.trace" /libfoundation.so)
        if [[ $line == *"OpenSSL 3.4."*"layout not verified"* && $line != *AES-NI* &&
            $line != *VAES* && $line != *"table ("* ]]; then
            pass "$N vendor unverified: $why; analyzer:${line#*native:}"
        else
            fail "$N vendor unverified: analyzer says: $line"
        fi
    fi
}

# The .so offset of libcrypto.a's NAME (aarch64): where its first 64 code bytes are.
arm_offset() {
    local o=$d/a/$1.o
    "$TLSM_PY" - "$ROOT/usr/lib/aarch64-linux-gnu/libcrypto.so.3" "$o" "$2" <<'EOF'
import re, subprocess, sys
so = open(sys.argv[1], "rb").read()
syms = subprocess.run(["aarch64-linux-gnu-nm", "-S", sys.argv[2]], capture_output=True, text=True).stdout
text = subprocess.run(["aarch64-linux-gnu-objcopy", "-O", "binary", "--only-section=.text", sys.argv[2], "/dev/stdout"], capture_output=True).stdout
for f in (l.split() for l in syms.splitlines()):
    if len(f) == 4 and f[3] == sys.argv[3]:
        off, size = int(f[0], 16), int(f[1], 16)
        hits = [m.start() for m in re.finditer(re.escape(text[off:off + 64]), so)]
        if len(hits) == 1:
            print(hits[0], size)
        sys.exit(0)
EOF
}

aarch64_part() {
    local L=$ROOT/usr/lib/aarch64-linux-gnu tag cap log base e line want r8 r0 logsz n8 n0
    if ! command -v aarch64-linux-gnu-objcopy >/dev/null; then
        skip "$N aarch64: no aarch64 binutils to find the kernels in libcrypto.a"
        return
    fi
    mkdir -p "$d/a"
    (cd "$d/a" && ar x "$L/libcrypto.a" libcrypto-lib-aes-gcm-armv8-unroll8_64.o \
        libcrypto-lib-aes-gcm-armv8_64.o)
    read -r -a r8 < <(arm_offset libcrypto-lib-aes-gcm-armv8-unroll8_64 unroll8_eor3_aes_gcm_dec_128_kernel)
    read -r -a r0 < <(arm_offset libcrypto-lib-aes-gcm-armv8_64 aes_gcm_dec_128_kernel)
    if [ "${#r8[@]}" != 2 ] || [ "${#r0[@]}" != 2 ]; then
        fail "$N aarch64: the kernels were not found in libcrypto.so.3 ('${r8[*]}' '${r0[*]}')"
        return
    fi
    for tag in default unroll8; do
        log=$d/qemu.$tag.log
        cap=()
        if [ $tag = unroll8 ]; then
            # The copy's own word with UNROLL8_EOR3 (bit 12) added, as the CPU model would.
            base=$(grep -o '"cpuinfo":"[^"]*OPENSSL_armcap=0x[0-9a-f]*' "$d/sc.default.jsonl" | head -n 1 | sed 's/.*=//')
            cap=("OPENSSL_armcap=$(printf '0x%x' $((base | 0x1000)))")
        fi
        QLOG=$log sclient $tag "${cap[@]}" || continue
        want="no UNROLL8_EOR3"
        [ $tag = unroll8 ] && want="unroll8_eor3 kernel"
        if ! e=$("${K[@]}" impl "$J" /libcrypto.so.3 armv8 pmull); then
            fail "$N aarch64 $tag: $e"
            continue
        fi
        base=$(grep '"ev":"lib"' "$J" | grep libcrypto.so.3 | grep -o '"base":"0x[0-9a-f]*"' | cut -d'"' -f4)
        # Guest instructions qemu translated inside each kernel: the one the copy ran.
        read -r n8 n0 < <("$TLSM_PY" - "$log" "$base" "${r8[@]}" "${r0[@]}" <<'EOF'
import re, sys
base = int(sys.argv[2], 16); k8 = (int(sys.argv[3]), int(sys.argv[4])); k0 = (int(sys.argv[5]), int(sys.argv[6]))
n8 = n0 = 0
for l in open(sys.argv[1], errors="replace"):
    m = re.match(r"0x([0-9a-f]+):", l)
    if m:
        a = int(m.group(1), 16) - base
        n8 += k8[0] <= a < k8[0] + k8[1]
        n0 += k0[0] <= a < k0[0] + k0[1]
print(n8, n0)
EOF
        )
        logsz=$(stat -c %s "$log" 2>/dev/null || echo none)
        rm -f "$log"
        line=$(detail "$d/sc.$tag.*.trace" /libcrypto.so.3)
        if [ $tag = default ] && { [ "$n0" = 0 ] || [ "$n8" != 0 ]; }; then
            fail "$N aarch64 $tag: qemu ran aes_gcm_dec_128_kernel $n0, unroll8 $n8 instructions (log $logsz bytes, base $base)"
        elif [ $tag = unroll8 ] && { [ "$n8" = 0 ] || [ "$n0" != 0 ]; }; then
            fail "$N aarch64 $tag: qemu ran unroll8 $n8, aes_gcm_dec_128_kernel $n0 instructions (log $logsz bytes, base $base)"
        elif [[ $line != *"native: hardware ("*"ARMv8 AES"*"PMULL"*"$want"* ]]; then
            fail "$N aarch64 $tag: analyzer says: $line"
        else
            pass "$N aarch64 $tag: armv8/pmull stitched, qemu translated $n0 + $n8 instructions of the two kernels; analyzer:${line#*native:}"
        fi
    done
}

case $(target_arch) in
x86_64)
    x86_64_part
    vendor_part
    ;;
aarch64) aarch64_part ;;
esac
