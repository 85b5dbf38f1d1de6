#!/usr/bin/env bash
# enc-upload: the encrypting side, traced on real uploads to tests/tools/hashserver.py (it
# answers with the sha256 of what it received: an instrument independent of tlsmeter).
# - curl uploads 32 MiB (TLS 1.3): the hash is right; >= 2048 application-data records with
#   dir "out" carry exactly the bytes the write events wrote (head + body), each record inside
#   its write; the analyzer's decrypt figures are exactly the dir-in records and reads (the
#   upload does not swell them), its "encrypt" object exactly the dir-out ones.
# - AES masked to the table code (OPENSSL_ia32cap, with TLSMETER_CALIBRATE=1): encrypt class
#   "table" and a software-aes verdict naming encryption with an expected gain; masked +
#   TLSMETER_CRYPTO=hw: same hash, records on path hw.
# - TLSMETER_VERIFY=1 (hw): every sealed record "verify":"same", no mismatch; with the test-only
#   TLSMETER_TEST_CORRUPT=1 every one a mismatch, one warning, and the hash still right (the
#   native record is the one sent).
# - curl, Python ssl and openssl s_client uploads over TLS 1.3 AES-128-GCM and ChaCha20, TLS 1.2
#   AES-256-GCM and ChaCha20; s_client with -max_send_frag / -split_send_frag + -max_pipelines.
# Under ASan and qemu the uploader is s_client (no curl, no host Python as the traced program).
# tlsm-arch: x86_64 aarch64
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=scripts/tlsmeter-mask.sh
. "$TLSM_TOP/scripts/tlsmeter-mask.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload enc-upload
CHECK=("$TLSM_PY" "$TLSM_TOOLS/enccheck.py")
ANALYZE=${TLSM_ANALYZE:-$O/tlsmeter-analyze}
analyze() { run_target "$ANALYZE" "$@"; } # under qemu the analyzer is a target program too
# AES (and carry-less multiply) hidden from OpenSSL: the table code runs.
tlsm_soft_mask "$(target_arch)" # the software mask (scripts/tlsmeter-mask.sh)
MASK="$TLSM_MASK_VAR=$TLSM_MASK"

BIG=$((32 * 1024 * 1024))
MINRECS=2048
if under_qemu; then # every byte is emulated: 2 MiB make the point
    BIG=$((2 * 1024 * 1024))
    MINRECS=128
fi
head -c "$BIG" /dev/urandom >"$d/big.bin"
head -c $((4 * 1024 * 1024 + 321)) /dev/urandom >"$d/mid.bin"

# The server: one per case, any protocol and suite (the clients choose).
tls_hashserver_start "$d" "enc-upload" || exit 0

UP=curl
tls_client_ok curl || UP=sclient

# upload KIND FILE PREFIX TRACE [client args...]: one upload by KIND (curl, py, sclient); the
# server's answer in PREFIX.out. TRACE empty: untraced.
upload() {
    local kind=$1 file=$2 p=$3 trace=$4 size
    shift 4
    size=$(tls_size "$file")
    case $kind in
    curl)
        tls_run "$p" "$trace" curl -sS --cacert "$TLS_CERT" --data-binary "@$file" "$@" \
            "https://127.0.0.1:$PORT/"
        ;;
    py)
        tls_run "$p" "$trace" "$TLSM_PY" "$TLSM_TOOLS/pyupload.py" --port "$PORT" \
            --cafile "$TLS_CERT" --file "$file" "$@"
        ;;
    sclient)
        # A RAW head and the file on stdin: -quiet (ignore stdin EOF, wait for the answer),
        # -nocommands (a line starting with Q or R is data, not a command).
        { printf 'RAW %d\n' "$size"; cat "$file"; } >"$p.req"
        tls_run "$p" "$trace" openssl s_client -connect "127.0.0.1:$PORT" -quiet -nocommands \
            -CAfile "$TLS_CERT" -servername localhost "$@" <"$p.req"
        rm -f "$p.req"
        ;;
    esac
}

# hash_ok NAME FILE PREFIX: the server's answer is FILE's sha256 and size, and the client
# exited 0.
hash_ok() {
    local want
    want="sha256=$(tls_sha "$2") bytes=$(tls_size "$2")"
    if [ "$(cat "$3.rc")" != 0 ] || ! grep -qx "$want" "$3.out"; then
        fail "$1: exit $(cat "$3.rc"), answer '$(head -c 120 "$3.out")', want '$want'" \
            "(stderr: $(grep -v '^depth\|^verify' "$3.err" | head -c 200))"
        return 1
    fi
}

# one_trace NAME PREFIX: exactly one trace of the run, in TRACE.
one_trace() {
    tls_traces "$2.trace.*.jsonl"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "$1: ${#TRACES[@]} trace files, want 1"
        return 1
    fi
    TRACE=${TRACES[0]}
}

# --- the 32 MiB upload: hash, records covering the writes, analyzer per direction ---------
p=$d/big
upload "$UP" "$d/big.bin" "$p.plain" ""
upload "$UP" "$d/big.bin" "$p" "$p.trace.%p.jsonl"
if hash_ok "enc-upload $UP 32 MiB" "$d/big.bin" "$p.plain" &&
    hash_ok "enc-upload $UP 32 MiB traced" "$d/big.bin" "$p" && one_trace "enc-upload big" "$p"; then
    pass "enc-upload $UP $((BIG >> 20)) MiB: the server's sha256 is the file's, traced and not"
    tls_check "enc-upload $UP records dir out cover the writes" "${CHECK[@]}" records "$TRACE" \
        --body "$BIG" --min-recs "$MINRECS" --tls 1.3
    analyze --json "$TRACE" >"$p.json" 2>"$p.an.err"
    read -r inr inb outr outb _ < <("${CHECK[@]}" count "$TRACE" | tr ' ' '\n' | cut -d= -f2 |
        tr '\n' ' ')
    tls_check "enc-upload analyzer: decrypt figures are the dir-in records ($inr) and reads, encrypt the dir-out ($outr)" \
        "${CHECK[@]}" analyzer "$p.json" --in-records "$inr" --in-bytes "$inb" \
        --out-records "$outr" --out-bytes "$outb"
fi

# --- masked to table AES, then masked + hw ------------------------------------------------
if [ -n "$MASK" ]; then
    p=$d/masked
    TLS_ENV=("$MASK" TLSMETER_CALIBRATE=1) # calibration: the hardware reference for the gain
    upload "$UP" "$d/big.bin" "$p" "$p.trace.%p.jsonl"
    TLS_ENV=()
    if hash_ok "enc-upload masked" "$d/big.bin" "$p" && one_trace "enc-upload masked" "$p"; then
        analyze --json "$TRACE" >"$p.json" 2>"$p.an.err"
        # Under qemu the emulated AES instructions are slower than the table code: a gain, < 1.
        gmin=1
        under_qemu && gmin=0
        tls_check "enc-upload masked: encrypt class table, software-aes names encryption with its expected gain (> $gmin)" \
            "${CHECK[@]}" analyzer "$p.json" --impl table --verdict software-aes --gain "$gmin"
    fi
    if tls_mode_ok hw; then
        p=$d/maskedhw
        TLS_ENV=("$MASK" TLSMETER_CRYPTO=hw)
        upload "$UP" "$d/big.bin" "$p" "$p.trace.%p.jsonl"
        TLS_ENV=()
        if hash_ok "enc-upload masked + hw" "$d/big.bin" "$p" && one_trace "enc-upload maskedhw" "$p"; then
            analyze --json "$TRACE" >"$p.json" 2>"$p.an.err"
            tls_check "enc-upload masked + hw: same hash, sealed on the hw backend (class hardware, no software-aes)" \
                "${CHECK[@]}" analyzer "$p.json" --impl hardware --no-verdict software-aes
            tls_check "enc-upload masked + hw: every out record on path hw" "${CHECK[@]}" records \
                "$TRACE" --path hw --min-recs "$MINRECS"
        fi
    else
        skip "enc-upload masked + hw: $TLS_MODE_SKIP"
    fi
else
    skip "enc-upload masked: no capability mask for $(target_arch)"
fi

# --- clients x suites ----------------------------------------------------------------------
CONFIGS=(
    "1.3 TLS_AES_128_GCM_SHA256 AES-128-GCM"
    "1.3 TLS_CHACHA20_POLY1305_SHA256 ChaCha20-Poly1305"
    "1.2 ECDHE-RSA-AES256-GCM-SHA384 AES-256-GCM"
    "1.2 ECDHE-RSA-CHACHA20-POLY1305 ChaCha20-Poly1305"
)
suite_args() { # KIND PROTO SUITE: the client's options for them
    case $1.$2 in
    curl.1.3) echo "--tlsv1.3 --tls13-ciphers $3" ;;
    curl.1.2) echo "--tlsv1.2 --tls-max 1.2 --ciphers $3" ;;
    py.1.3) echo "--tls 1.3" ;; # Python cannot choose TLS 1.3 suites: see the cipher check
    py.1.2) echo "--tls 1.2 --cipher $3" ;;
    sclient.1.3) echo "-tls1_3 -ciphersuites $3" ;;
    sclient.1.2) echo "-tls1_2 -cipher $3" ;;
    esac
}
# --- TLSMETER_VERIFY: no mismatch; the corruption switch caught ---------------------------
# TLS 1.3 AES-GCM, TLS 1.2 AES-GCM (its nonce counter: the native context must follow the
# shadow's, or every verified record would differ) and TLS 1.2 ChaCha20.
VCONFIGS=(
    "1.3 TLS_AES_256_GCM_SHA384"
    "1.2 ECDHE-RSA-AES128-GCM-SHA256"
    "1.2 ECDHE-RSA-CHACHA20-POLY1305"
)
for s in "${VCONFIGS[@]}"; do
    if ! tls_mode_ok hw; then
        skip "enc-upload verify: $TLS_MODE_SKIP"
        break
    fi
    read -r proto suite <<<"$s"
    # shellcheck disable=SC2207
    sargs=($(suite_args "$UP" "$proto" "$suite"))
    p=$d/verify.$suite
    TLS_ENV=(TLSMETER_CRYPTO=hw TLSMETER_VERIFY=1)
    upload "$UP" "$d/mid.bin" "$p" "$p.trace.%p.jsonl" "${sargs[@]}"
    TLS_ENV=()
    if hash_ok "enc-upload verify $suite" "$d/mid.bin" "$p" && one_trace "enc-upload verify" "$p"; then
        tls_check "enc-upload TLSMETER_VERIFY=1 TLS $proto $suite: every sealed record the same both ways" \
            "${CHECK[@]}" records "$TRACE" --verify same --path hw --min-recs 200 --tls "$proto"
    fi
    p=$d/corrupt.$suite
    TLS_ENV=(TLSMETER_CRYPTO=hw TLSMETER_VERIFY=1 TLSMETER_TEST_CORRUPT=1)
    upload "$UP" "$d/mid.bin" "$p" "$p.trace.%p.jsonl" "${sargs[@]}"
    TLS_ENV=()
    if hash_ok "enc-upload corrupt $suite (the native record must be the one sent)" "$d/mid.bin" "$p" &&
        one_trace "enc-upload corrupt" "$p"; then
        # One warning per process, for whichever record came first (a decrypted one may).
        if [ "$(tls_notes "$p.err")" != 1 ] || ! grep -q 'TLSMETER_VERIFY:.* record differently' "$p.err"; then
            fail "enc-upload corrupt $suite: want one TLSMETER_VERIFY warning, got: $(grep '^tlsmeter:' "$p.err" | head -c 300)"
        elif ! grep -q '"out":{"routed":[1-9][0-9]*,"verified":[1-9][0-9]*,"mismatches":[1-9]' "$TRACE"; then
            fail "enc-upload corrupt $suite: end.reroute.out counts no encrypt mismatch: $(grep -o '"reroute":{[^}]*}[^}]*}' "$TRACE")"
        else
            tls_check "enc-upload TLSMETER_TEST_CORRUPT=1 TLS $proto $suite: every sealed record a mismatch, caught, the native one sent" \
                "${CHECK[@]}" records "$TRACE" --verify mismatch --path hw --min-recs 200
        fi
    fi
done

for c in curl py sclient; do
    if ! tls_client_ok "$c"; then
        skip "enc-upload $c: $TLS_CLIENT_SKIP"
        continue
    fi
    for s in "${CONFIGS[@]}"; do
        read -r proto suite cipher <<<"$s"
        name="enc-upload $c TLS $proto $cipher"
        p=$d/m.$c.$suite
        # shellcheck disable=SC2046
        upload "$c" "$d/mid.bin" "$p" "$p.trace.%p.jsonl" $(suite_args "$c" "$proto" "$suite")
        if ! hash_ok "$name" "$d/mid.bin" "$p" || ! one_trace "$name" "$p"; then
            continue
        fi
        cwant=(--cipher "$cipher")
        [ "$c.$proto" = py.1.3 ] && cwant=() # Python's TLS 1.3 suite is OpenSSL's default choice
        tls_check "$name: records cover the writes" "${CHECK[@]}" records "$TRACE" \
            --tls "$proto" "${cwant[@]}" --min-recs 256
    done
done

# --- record splitting: max_send_fragment, split_send_fragment with pipelines ---------------
for frag in "-max_send_frag 4096:4096" "-split_send_frag 2048 -max_pipelines 4:2048"; do
    fopts=${frag%:*} max=${frag##*:}
    p=$d/frag.$max
    # shellcheck disable=SC2086 # the options are words
    upload sclient "$d/mid.bin" "$p" "$p.trace.%p.jsonl" $fopts
    if ! hash_ok "enc-upload s_client $fopts" "$d/mid.bin" "$p" || ! one_trace "enc-upload frag" "$p"; then
        continue
    fi
    tls_check "enc-upload s_client $fopts: records of <= $max B cover the writes" \
        "${CHECK[@]}" records "$TRACE" --max-pt "$max" --min-recs $((4 * 1024 * 1024 / max))
done

# --- stacks for writes: --direction out weights the folded stacks by the sealed records -----
p=$d/stacks
TLS_ENV=(TLSMETER_STACKS=10)
upload "$UP" "$d/mid.bin" "$p" "$p.trace.%p.jsonl"
TLS_ENV=()
if hash_ok "enc-upload stacks" "$d/mid.bin" "$p" && one_trace "enc-upload stacks" "$p"; then
    analyze --direction out --folded "$TRACE" >"$p.out.folded" 2>/dev/null
    analyze --folded "$TRACE" >"$p.in.folded" 2>/dev/null
    wo=$(awk '{s += $NF} END {print s + 0}' "$p.out.folded")
    wi=$(awk '{s += $NF} END {print s + 0}' "$p.in.folded")
    # Their crypto_ns; a record flagged preempted or stalled weighs the analyzer's estimate
    # instead, which --json's crypto_ns totals as well.
    wantns=$("$TLSM_PY" -c 'import json, sys
recs = [e for e in map(json.loads, open(sys.argv[1])) if e.get("ev") == "rec" and e.get("dir") == "out"]
if any(r.get("preempt") or r.get("stall") for r in recs):
    print(json.loads(sys.stdin.read())["crypto_ns"])
else:
    print(sum(r["crypto_ns"] for r in recs))' "$TRACE" < <(analyze --direction out --json "$TRACE" 2>/dev/null))
    if grep -q '"ev":"stack"' "$TRACE" && [ "$wo" -gt "$wi" ] && [ "$wo" = "$wantns" ]; then
        pass "enc-upload stacks: --direction out --folded weighs the sealed records ($wo ns = their crypto_ns; decrypt side $wi ns)"
    else
        fail "enc-upload stacks: folded weights out $wo, in $wi, sealed records' crypto_ns $wantns (stack events: $(grep -c '"ev":"stack"' "$TRACE"))"
    fi
fi

# --- tlsmeter ab on an upload: the table has the encrypting side, hw sealing faster ---------
if [ "$UP" != curl ] || [ -z "${MASK#OPENSSL_armcap=0}" ] || [ -n "${TLSM_SAN:-}" ] || ! tls_mode_ok hw; then
    skip "enc-upload tlsmeter ab: needs curl, hw and the preload alone (not under SAN or qemu)"
else
    p=$d/ab
    env "$MASK" "$TLSM_TOP/scripts/tlsmeter-ab" -o "$p" --modes native,hw --lib "$TLSM_PRELOAD" \
        --analyzer "$ANALYZE" -- curl -sS --cacert "$TLS_CERT" --data-binary "@$d/mid.bin" \
        "https://127.0.0.1:$PORT/" >"$p.out" 2>"$p.err"
    if grep -q '^encrypt path  *native  *hw$' "$p.out" && grep -q '^encrypt impl  *table  *hardware$' "$p.out" &&
        grep -q '^encrypt vs native  *1x  *[0-9.]*x faster$' "$p.out" &&
        grep -q '^encryption (records sent)' "$p.out" && grep -q '^stdout sha256 .* same$' "$p.out"; then
        pass "enc-upload tlsmeter ab (masked): encrypt rows native -> hw, table -> hardware, $(sed -n 's/^encrypt vs native  *1x  *//p' "$p.out"); --compare has the encryption part"
    else
        fail "enc-upload tlsmeter ab: no encrypt rows as expected: $(grep -i 'encrypt\|sha256' "$p.out" | head -n 6 | tr '\n' '|') $(head -c 200 "$p.err")"
    fi
fi
