#!/usr/bin/env bash
# trust-impl: the implementation class comes from the code that ran.
#  1. Small records (a server writing one 20-byte or 100-byte record per write), TLS 1.3 and
#     TLS 1.2 AES-GCM, traced Python client: every GCM record names an impl event, whose
#     aes/ghash names follow OpenSSL's pairing rules for the instance's capability words, and
#     the analyzer says `hardware` with no `software-aes` verdict (default caps), or names
#     the software half under the masks (PCLMULQDQ hidden, AES-NI hidden, table).
#  2. The names agree with the real symbols: the vendor fixture links Debian's libcrypto.a
#     (symbols kept), so each function offset the preload wrote resolves in its .symtab.
#  3. ChaCha20-Poly1305 under the table mask is not called AVX2: OpenSSL tests AVX-512
#     before SSSE3 and has AVX2 only inside the SSSE3 path (scalar when AVX-512 is hidden
#     too).
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=scripts/tlsmeter-mask.sh
. "$TLSM_TOP/scripts/tlsmeter-mask.sh"
name=trust-impl
if under_qemu; then
    skip "$name: x86_64 masks and fixtures (aarch64: aarch64-impl)"
    exit 0
fi
d=$(case_dir)
tls_init "$d"
tls_need_preload "$name"
ANALYZE=$O/tlsmeter-analyze
CHECK=("$TLSM_PY" "$TLSM_TOOLS/implcheck.py")
# Each mask hides the named instructions in both their forms (word 0 legacy, word 1 VAES /
# VPCLMULQDQ): OpenSSL 3.5 runs its VAES + VPCLMULQDQ AVX-512 GCM kernel whenever both are
# left on, AES-NI or not. The ":~0x0" words keep 3.5's words 2-4 (scripts/tlsmeter-mask.sh).
MASK_PCLMUL="~0x200000000:~0x40000000000:~0x0:~0x0:~0x0"       # PCLMULQDQ, VPCLMULQDQ hidden
MASK_AESNI="~0x200000000000000:~0x20000000000:~0x0:~0x0:~0x0"  # AES-NI, VAES hidden
MASK_TABLE=$TLSM_IA32_SOFT_MASK                                # the software mask
MASK_SCALAR="~0x200020200000000:~0x60080010000:~0x0:~0x0:~0x0" # + AVX512F, AVX512VL hidden

# serve TLS SIZE CIPHER: one-record-per-write server (never traced); sets SRV_PORT.
serve() {
    local log=$d/srv.$1.$2.log pid
    env -u LD_PRELOAD "$TLSM_PY" "$TLSM_TOOLS/recserver.py" serve --cert "$TLS_CERT" \
        --key "$TLS_KEY" --tls "$1" --size "$2" --cipher "$3" --count 200 >"$log" 2>&1 &
    pid=$!
    TLS_PIDS+=("$pid")
    SRV_PID=$pid
    tls_wait_log "$log" port= "$pid" || return 1
    SRV_PORT=$(sed -n 's/^port=//p' "$log")
}

# get PREFIX TLS [VAR=VAL...]: traced client run; sets TRACE and JSON (analyzer --json).
get() {
    local p=$1 tls=$2
    shift 2
    TLS_ENV=("$@")
    tls_run "$p" "$p.%p.jsonl" "$TLSM_PY" "$TLSM_TOOLS/recserver.py" get --port "$SRV_PORT" \
        --cafile "$TLS_CERT" --tls "$tls"
    TLS_ENV=()
    TRACE=$(ls "$p".*.jsonl 2>/dev/null | head -n 1)
    JSON=$p.json
    [ -n "$TRACE" ] && "$ANALYZE" --json "$TRACE" >"$JSON" 2>"$p.aerr"
    [ "$(cat "$p.rc")" = 0 ] && [ -n "$TRACE" ]
}

# small TLS CIPHER-SUITE EVP-CIPHER SIZE
small() {
    local tls=$1 suite=$2 cipher=$3 size=$4 label m mask want
    if ! serve "$tls" "$size" "$suite"; then
        fail "$name: record server ($tls, $size B) did not start"
        return
    fi
    for m in default pclmul aesni table; do
        label="$name $tls $cipher ${size}B $m"
        case $m in
        default) mask=() want=hardware ;;
        pclmul) mask=(OPENSSL_ia32cap="$MASK_PCLMUL") want=table ;;
        aesni) mask=(OPENSSL_ia32cap="$MASK_AESNI") want=table ;; # < 8 blocks: AES_encrypt
        table) mask=(OPENSSL_ia32cap="$MASK_TABLE") want=table ;;
        esac
        if ! get "$d/$tls.$size.$m" "$tls" "${mask[@]}"; then
            fail "$label: client failed: $(head -c 300 "$d/$tls.$size.$m.err")"
            continue
        fi
        if ! why=$("${CHECK[@]}" rules "$TRACE"); then
            fail "$label: $why"
        elif [ "$m" = default ] && ! why=$("${CHECK[@]}" report "$JSON" "$cipher" hardware \
            --no-verdict software-aes); then
            fail "$label: $why"
        elif [ "$m" != default ] && ! why=$("${CHECK[@]}" report "$JSON" "$cipher" "$want" \
            --has "in software"); then
            fail "$label: $why"
        else
            pass "$label: $why"
        fi
    done
    tls_stop_pid "$SRV_PID"
}

# 0. A malformed impl event is named (file:line) and skipped; its records fall back to the
#    GCM-entry evidence.
g=$TLSM_TOP/tests/golden
{
    grep -v '"ev":"impl"' "$g/real-impl-pclmul.jsonl" | head -n 3
    echo '{"ev":"impl","id":1,"lib":1,"aes":"AES NI","ghash":"4bit"}'
    grep -v '"ev":"impl"' "$g/real-impl-pclmul.jsonl" | tail -n +4
} >"$d/bad-impl.jsonl"
"$ANALYZE" --json "$d/bad-impl.jsonl" >"$d/bad-impl.json" 2>"$d/bad-impl.err"
if grep -q 'bad-impl.jsonl:4: skipped: impl needs' "$d/bad-impl.err" &&
    grep -q '"impl_detail": ".*via ctr32' "$d/bad-impl.json"; then
    pass "$name malformed impl event: named and skipped"
else
    fail "$name malformed impl event: $(head -c 300 "$d/bad-impl.err")"
fi

small 1.3 ECDHE-RSA-AES128-GCM-SHA256 AES-256-GCM 20
small 1.3 ECDHE-RSA-AES128-GCM-SHA256 AES-256-GCM 100
small 1.2 ECDHE-RSA-AES128-GCM-SHA256 AES-128-GCM 20
small 1.2 ECDHE-RSA-AES256-GCM-SHA384 AES-256-GCM 100

# 3. ChaCha20-Poly1305 (TLS 1.2 suite: Python cannot pick TLS 1.3 suites).
if serve 1.2 100 ECDHE-RSA-CHACHA20-POLY1305; then
    for m in table scalar; do
        label="$name ChaCha20 $m mask"
        mask=$MASK_TABLE
        [ $m = scalar ] && mask=$MASK_SCALAR
        if ! get "$d/chacha.$m" 1.2 OPENSSL_ia32cap="$mask"; then
            fail "$label: client failed: $(head -c 300 "$d/chacha.$m.err")"
            continue
        fi
        # What OpenSSL runs, from the instance's own capability words.
        want=$("$TLSM_PY" -c 'import json, re, sys
for e in map(json.loads, open(sys.argv[1])):
    if e.get("ev") == "lib" and "ia32cap" in e.get("cpuinfo", ""):
        w = int(re.search(r":0x([0-9a-f]+)", e["cpuinfo"]).group(1), 16)
        print("vector AVX-512" if w >> 16 & 1 else "vector AVX-512VL" if w >> 31 & 1
              else "table scalar")
        break' "$TRACE")
        if ! why=$("${CHECK[@]}" report "$JSON" ChaCha20-Poly1305 "${want%% *}" \
            --not-in "ChaCha20: AVX2" --not-in "ChaCha20: SSSE3" --has "ChaCha20: ${want#* }"); then
            fail "$label: $why"
        else
            pass "$label: $why"
        fi
    done
    tls_stop_pid "$SRV_PID"
else
    fail "$name: ChaCha20 record server did not start"
fi

# 2. Names against the symbol table of a static libcrypto.a copy.
V=$O/vendor
if ! out=$("$TLSM_TOP/tests/vendor/build" "$V" 2>&1); then
    if echo "$out" | grep -q 'libssl-dev'; then
        skip "$name symbols: $out"
    else
        fail "$name symbols: fixtures did not build: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
    fi
    exit 0
fi
tls_make_file big.bin $((256 * 1024))
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "$name symbols: openssl s_server did not start"
    exit 0
fi
for m in default pclmul aesni table; do
    case $m in
    default) mask=() ;;
    pclmul) mask=(OPENSSL_ia32cap="$MASK_PCLMUL") ;;
    aesni) mask=(OPENSSL_ia32cap="$MASK_AESNI") ;;
    table) mask=(OPENSSL_ia32cap="$MASK_TABLE") ;;
    esac
    p=$d/vendor.$m
    TLS_ENV=("${mask[@]}")
    tls_run "$p" "$p.%p.jsonl" "$V/first/vclient" -p "$TLS_PORT" -c "$TLS_CERT" -f big.bin
    TLS_ENV=()
    TRACE=$(ls "$p".*.jsonl 2>/dev/null | head -n 1)
    if [ "$(cat "$p.rc")" != 0 ] || [ -z "$TRACE" ]; then
        fail "$name symbols $m: vclient failed: $(head -c 300 "$p.err")"
    elif ! why=$("${CHECK[@]}" rules "$TRACE") ||
        ! why=$("${CHECK[@]}" symbols "$TRACE" "$V/first/libvendor.so"); then
        fail "$name symbols $m: $why"
    else
        pass "$name symbols $m: $why"
    fi
done
