#!/usr/bin/env bash
# openssl111-trace: a real OpenSSL 1.1.1 copy traced (preload/abi_ossl111.c). Debian 11's
# openssl 1.1.1w (s_client with its own libssl.so.1.1/libcrypto.so.1.1, fetched by
# scripts/bullseye-root through a private apt configuration) downloads 16 MiB from a local
# `openssl s_server -WWW` (the host's), under the preload built here: 1.1.1's libraries need
# glibc <= 2.31 and run on this host's glibc, so the host build can trace them (on a Debian 11
# userland itself the dist build is needed). Per suite (TLS 1.3 AES-128-GCM, TLS 1.3
# ChaCha20-Poly1305, TLS 1.2 AES-256-GCM and ChaCha20-Poly1305 through 1.1.1's EVP_Cipher path): output unchanged,
# every read byte accounted for, >= 1 record per 16 KiB, the lib event says abi 1.1.1; for
# AES-GCM the analyzer's class is hardware, with the capability mask table plus the
# software-aes verdict (the impl event's block function is 1.1.1's own AES_encrypt, by nm -D), and masked + TLSMETER_CRYPTO=hw every record on path hw (on a copy of
# its own libcrypto.so.1.1, and on the system's OpenSSL 3 through TLSMETER_BACKEND_LIB), same
# output; TLSMETER_CALIBRATE=1 gives calib lines
# from those backends and TLSMETER_STACKS=1 stack ids on the records. Under qemu (make check-aarch64) the
# arm64 packages run with OPENSSL_armcap=0 as the mask. Skips only when the packages cannot
# be fetched.
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=tests/lib-bullseye.sh
. "$TLSM_TOP/tests/lib-bullseye.sh"
# shellcheck source=scripts/tlsmeter-mask.sh
. "$TLSM_TOP/scripts/tlsmeter-mask.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload openssl111-trace
A=$O/tlsmeter-analyze
[ -x "$A" ] || { fail "openssl111-trace: $A not built; run make" && exit 0; }
if under_qemu; then
    target_wrapper "$A" "$d/analyze"
    A=$d/analyze
fi
case $(target_arch) in
aarch64) deb=arm64 triplet=aarch64-linux-gnu ;;
*) deb=amd64 triplet=x86_64-linux-gnu ;;
esac
tlsm_soft_mask "$(target_arch)" # the software mask (scripts/tlsmeter-mask.sh)
MASK="$TLSM_MASK_VAR=$TLSM_MASK"
bz_root openssl111-trace "$deb" # skips, saying why, when the packages cannot be fetched
ROOT=$BZ_ROOT
LIB=$ROOT/usr/lib/$triplet
BODY=$((16 * 1024 * 1024 + 77))
under_qemu && BODY=$((4 * 1024 * 1024 + 77)) # emulated: a quarter of the bytes
tls_make_file big.bin "$BODY"

# dl OUTPREFIX TRACE: 1.1.1's s_client GETs big.bin; stdout is what SSL_read returned.
dl() {
    local p=$1
    printf 'GET /big.bin HTTP/1.0\r\n\r\n' >"$p.req"
    tls_run "$p" "$2" LD_LIBRARY_PATH="$LIB" "$ROOT/usr/bin/openssl" s_client \
        -connect "127.0.0.1:$TLS_PORT" -quiet -CAfile "$TLS_CERT" -verify_return_error \
        -servername localhost <"$p.req"
    tls_size "$p.out" >"$p.got"
}

# traced TAG: a traced download with TLS_ENV, compared with the plain one; sets TRACE.
traced() {
    local p=$d/$1.$suite why
    dl "$p" "$p.%p.jsonl"
    if ! why=$(tls_same_run "$1" "$d/plain.$suite" "$p"); then
        fail "openssl111-trace $1 $suite: $why"
        return 1
    fi
    tls_traces "$p.*.jsonl"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "openssl111-trace $1 $suite: ${#TRACES[@]} trace files, want 1"
        return 1
    fi
    TRACE=${TRACES[0]}
}

# analyzed NAME TRACE CLASS VERDICT(yes|no) PATH: the analyzer's class, software-aes verdict
# and decryption paths.
analyzed() {
    "$A" --json "$2" >"$2.json" 2>"$2.json.err" ||
        { fail "$1: tlsmeter-analyze failed: $(head -c 200 "$2.json.err")" && return; }
    tls_check "$1" "$TLSM_PY" -c 'import json, sys
s = json.load(open(sys.argv[1]))
want, verdict, path = sys.argv[2:]
ids = [v["id"] for v in s.get("verdicts", [])]
errs = []
if s.get("impl") != want:
    errs.append("impl %r, want %s" % (s.get("impl"), want))
if ("software-aes" in ids) != (verdict == "yes"):
    errs.append("software-aes verdict %s, want %s (verdicts %r)" % ("software-aes" in ids, verdict, ids))
if set(s.get("paths", {})) != {path}:
    errs.append("paths %r, want only %s" % (sorted(s.get("paths", {})), path))
sys.exit("; ".join(errs) if errs else 0)' "$2.json" "$3" "$4" "$5"
}

# lib_is_111 NAME TRACE: the program's instances are 1.1.1 copies with decoded capabilities.
lib_is_111() {
    tls_check "$1" "$TLSM_PY" -c 'import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
libs = [e for e in ev if e["ev"] == "lib" and e.get("role") == "app"]
assert libs and all(e["abi"] == "1.1.1" and e["version"].startswith("OpenSSL 1.1.1w") for e in libs), libs
crypto = [e for e in libs if e["has_crypto"]]
assert crypto and all(e["caps"] for e in crypto), crypto
impl = [e for e in ev if e["ev"] == "impl"]
assert all(e["layout"] == "1.1.1" for e in impl), impl
' "$2"
}

for s in "1.3 TLS_AES_128_GCM_SHA256 AES-128-GCM" "1.3 TLS_CHACHA20_POLY1305_SHA256 ChaCha20-Poly1305" \
    "1.2 ECDHE-RSA-AES256-GCM-SHA384 AES-256-GCM" "1.2 ECDHE-RSA-CHACHA20-POLY1305 ChaCha20-Poly1305"; do
    read -r proto suite cipher <<<"$s"
    if ! tls_server_start "$proto" "$suite"; then
        fail "openssl111-trace $suite: openssl s_server did not start"
        continue
    fi
    dl "$d/plain.$suite" ""
    if [ "$(cat "$d/plain.$suite.rc")" != 0 ] || [ "$(cat "$d/plain.$suite.got")" -le "$BODY" ]; then
        fail "openssl111-trace $suite: 1.1.1 s_client failed without the preload: $(tail -n 2 "$d/plain.$suite.err")"
        tls_server_stop
        continue
    fi
    got=$(cat "$d/plain.$suite.got")
    TLS_ENV=()
    if traced default; then
        tls_trace_check "openssl111-trace records $suite" "$TRACE" --got "$got" --full-read \
            --body "$BODY" --cipher "$cipher" --tls "$proto" --conns 1 --path native
        lib_is_111 "openssl111-trace lib abi 1.1.1 $suite" "$TRACE"
        [ "$cipher" != ChaCha20-Poly1305 ] &&
            analyzed "openssl111-trace default is hardware $suite" "$TRACE" hardware no native
    fi
    # Calibration and stacks for a 1.1.1 copy: calib runs on backends copied from its own
    # libcrypto.so.1.1 (role backend, abi 1.1.1), records carry stack ids.
    if [ "$suite" = TLS_AES_128_GCM_SHA256 ] && tls_mode_ok hw; then
        TLS_ENV=(TLSMETER_CALIBRATE=1 TLSMETER_STACKS=1)
        traced calib && tls_check "openssl111-trace calib and stacks $suite" "$TLSM_PY" -c 'import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
cal = {(e["mode"], e["cipher"]): e["impl"] for e in ev if e["ev"] == "calib"}
assert cal.get(("hw", "AES-128-GCM")) == "hardware" and cal.get(("soft", "AES-128-GCM")) == "table", cal
bk = [e for e in ev if e["ev"] == "lib" and e.get("role") == "backend"]
assert bk and all(e["abi"] == "1.1.1" and e["version"].startswith("OpenSSL 1.1.1w") for e in bk), bk
recs = [e for e in ev if e["ev"] == "rec" and e.get("dir", "in") == "in" and e["type"] == 23]
assert recs and all(e.get("stack") for e in recs), "app-data records without stack ids"
assert any(e["ev"] == "stack" for e in ev), "no stack events"
' "$TRACE"
        TLS_ENV=()
    fi
    if [ "$cipher" = ChaCha20-Poly1305 ]; then
        tls_server_stop
        continue
    fi
    TLS_ENV=("$MASK")
    if traced masked; then
        analyzed "openssl111-trace masked is table, software-aes $suite" "$TRACE" table yes native
        # The block function the impl event names is 1.1.1's exported table AES_encrypt
        # (an independent check: the copy's own symbol table).
        sym=$(nm -D --defined-only "$LIB/libcrypto.so.1.1" 2>/dev/null | awk '$3 ~ /^AES_encrypt@/ {print $1}')
        tls_check "openssl111-trace masked impl block is AES_encrypt (0x${sym:-?}) $suite" \
            "$TLSM_PY" -c 'import json, sys
imp = [json.loads(l) for l in open(sys.argv[1]) if "\"impl\"" in l]
imp = [e for e in imp if e["ev"] == "impl"]
want = int(sys.argv[2], 16)
assert imp and all(e["aes"] == "table" and int(e["fn_block_off"], 16) == want for e in imp), imp
' "$TRACE" "${sym:-0}"
    fi
    if tls_mode_ok hw; then
        TLS_ENV=("$MASK" TLSMETER_CRYPTO=hw)
        if traced masked-hw; then
            tls_trace_check "openssl111-trace masked hw records $suite" "$TRACE" --got "$got" \
                --full-read --body "$BODY" --cipher "$cipher" --tls "$proto" --path hw \
                --reroute 'routed>0' --reroute fallback=0
            analyzed "openssl111-trace masked hw is hardware $suite" "$TRACE" hardware no hw
        fi
        # The backend from another ABI: the system's OpenSSL 3 (TLSMETER_BACKEND_LIB) serving
        # the 1.1.1 copy; its TLS 1.2 records must still return what 1.1.1 would.
        sys3=$(ls /lib/"$triplet"/libcrypto.so.3 /usr/lib/"$triplet"/libcrypto.so.3 2>/dev/null | head -n 1)
        under_qemu && sys3=/usr/lib/$triplet/libcrypto.so.3 # the sysroot's, as the guest sees it
        TLS_ENV=("$MASK" TLSMETER_CRYPTO=hw TLSMETER_BACKEND_LIB="$sys3")
        if [ -n "$sys3" ] && traced masked-hw3; then
            tls_trace_check "openssl111-trace masked hw on OpenSSL 3 records $suite" "$TRACE" \
                --got "$got" --full-read --body "$BODY" --cipher "$cipher" --tls "$proto" \
                --path hw --reroute 'routed>0' --reroute fallback=0
        fi
    else
        skip "openssl111-trace masked hw $suite: $TLS_MODE_SKIP"
    fi
    TLS_ENV=()
    tls_server_stop
done
