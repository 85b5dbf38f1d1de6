#!/usr/bin/env bash
# reroute-verify: TLSMETER_VERIFY=1 decrypts every rerouted record both ways and compares. Over
# full downloads (TLS 1.3 AES-GCM and ChaCha20, TLS 1.2 AES-GCM; hw and soft) there must be no
# mismatch (verified > 0, mismatches 0, every record "verify":"same"). TLSMETER_TEST_CORRUPT=1
# damages the backend's output of verified records: the check must catch it (mismatches > 0,
# records "verify":"mismatch", exactly one tlsmeter warning) while the download stays intact,
# because the program's own result is the one delivered. Downloads with $TLS_DL (curl, else our
# C client: under ASan and under qemu).
# tlsm-arch: x86_64 aarch64
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload reroute-verify

BODY=$((2 * 1024 * 1024 + 999))
# Under qemu every byte is emulated (and verified twice): 33 records make the point.
under_qemu && BODY=$((512 * 1024 + 999))
tls_make_file v.bin "$BODY"
CONFIGS=(
    "1.3 TLS_AES_128_GCM_SHA256"
    "1.3 TLS_CHACHA20_POLY1305_SHA256"
    "1.2 ECDHE-RSA-AES256-GCM-SHA384"
)

# run_verify TAG MODE VAR=VALUE...: a $TLS_DL download with TLSMETER_CRYPTO=MODE TLSMETER_VERIFY=1
# and the extra settings, compared with the plain run; sets P and TRACES, 1 after a failure.
run_verify() {
    local tag=$1 mode=$2 why
    shift 2
    P=$d/$tag
    TLS_ENV=("TLSMETER_CRYPTO=$mode" TLSMETER_VERIFY=1 "$@")
    tls_client "$TLS_DL" "$TLS_PORT" v.bin "$P" "$P.trace.%p.jsonl"
    TLS_ENV=()
    if ! why=$(tls_same_run "$tag" "$d/plain.$suite" "$P"); then
        fail "reroute-verify $tag: $why"
        return 1
    fi
    tls_traces "$P.trace.*.jsonl"
    [ "${#TRACES[@]}" -eq 1 ] && return 0
    fail "reroute-verify $tag: ${#TRACES[@]} trace files, want 1"
    return 1
}

# rec_verify TRACE WORD: every record of TRACE carries "verify":WORD.
rec_verify() {
    "$TLSM_PY" -c 'import json, sys
recs = [e for e in map(json.loads, open(sys.argv[1])) if e.get("ev") == "rec"]
bad = sorted({str(e.get("verify")) for e in recs if e.get("verify") != sys.argv[2]})
sys.exit("records with verify %s, want all %s" % (bad, sys.argv[2]) if bad or not recs else 0)' \
        "$1" "$2"
}

for s in "${CONFIGS[@]}"; do
    read -r proto suite <<<"$s"
    if ! tls_server_start "$proto" "$suite"; then
        fail "reroute-verify $suite: openssl s_server did not start"
        continue
    fi
    tls_client "$TLS_DL" "$TLS_PORT" v.bin "$d/plain.$suite"
    if [ "$(cat "$d/plain.$suite.rc")" != 0 ]; then
        fail "reroute-verify $suite: $TLS_DL failed without the preload"
        tls_server_stop
        continue
    fi
    if ! tls_mode_ok hw; then
        skip "reroute-verify $suite: $TLS_MODE_SKIP"
        tls_server_stop
        continue
    fi
    for mode in hw soft; do
        tag="$mode $suite"
        if run_verify "$mode.$suite" "$mode"; then
            if [ "$(tls_notes "$P.err")" -ne 0 ]; then
                fail "reroute-verify $tag: tlsmeter said: $(grep '^tlsmeter:' "$P.err" | head -n 2)"
            elif ! why=$(rec_verify "${TRACES[0]}" same 2>&1); then
                fail "reroute-verify $tag: $why"
            else
                tls_trace_check "reroute-verify $tag" "${TRACES[0]}" --body "$BODY" --full-read \
                    --got "$(cat "$P.got")" --conns 1 --path "$mode" --reroute 'verified>0' \
                    --reroute mismatches=0 --reroute fallback=0
            fi
        fi
    done
    # Corrupted backend output: caught, reported once, never delivered.
    tag="corrupt hw $suite"
    if run_verify "corrupt.$suite" hw TLSMETER_TEST_CORRUPT=1; then
        warn=$(grep '^tlsmeter:' "$P.err")
        if [ "$(tls_notes "$P.err")" -ne 1 ] || [[ $warn != *TLSMETER_VERIFY* ]]; then
            fail "reroute-verify $tag: want one tlsmeter warning naming TLSMETER_VERIFY," \
                "got $(tls_notes "$P.err"): $(head -c 300 <<<"$warn")"
        elif ! why=$(rec_verify "${TRACES[0]}" mismatch 2>&1); then
            fail "reroute-verify $tag: $why"
        else
            tls_trace_check "reroute-verify $tag" "${TRACES[0]}" --body "$BODY" --full-read \
                --got "$(cat "$P.got")" --conns 1 --path hw --reroute 'verified>0' \
                --reroute 'mismatches>0'
        fi
    fi
    tls_server_stop
done
