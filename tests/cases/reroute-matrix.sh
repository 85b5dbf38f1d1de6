#!/usr/bin/env bash
# reroute-matrix: TLSMETER_CRYPTO=hw and =soft for every suite of the core matrix with curl,
# Python ssl and openssl s_client. Each rerouted download must be the plain run byte for byte
# (body sha256, stdout, stderr, exit code), every application-data record must carry the
# chosen path, and end.reroute must say all records were routed (routed > 0, fallback 0).
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload reroute-matrix

# 1 MiB + an odd tail: 65 records, the last one partial; 30 rerouted downloads stay quick.
BODY=$((1024 * 1024 + 4321))
tls_make_file r.bin "$BODY"
want_sha=$(tls_sha "$TLS_WWW/r.bin")
CLIENTS=(curl py sclient)
MODES=(hw soft)

# check_mode CLIENT PROTO SUITE CIPHER MODE: one rerouted download against the plain one.
check_mode() {
    local c=$1 proto=$2 suite=$3 cipher=$4 mode=$5 p=$d/$1.$3 why
    local name="reroute-matrix $mode $c $suite"
    TLS_ENV=("TLSMETER_CRYPTO=$mode")
    tls_client "$c" "$TLS_PORT" r.bin "$p.$mode" "$p.$mode.trace.%p.jsonl"
    TLS_ENV=()
    if ! why=$(tls_same_run "$name" "$p.plain" "$p.$mode"); then
        fail "$name: $why"
        return
    fi
    tls_traces "$p.$mode.trace.*.jsonl"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "$name: ${#TRACES[@]} trace files, want 1 (stderr: $(head -c 200 "$p.$mode.err"))"
        return
    fi
    tls_trace_check "$name" "${TRACES[0]}" --got "$(cat "$p.$mode.got")" --body "$BODY" \
        --full-read --cipher "$cipher" --tls "$proto" --proto "TLSv$proto" --suite "$suite" \
        --conns 1 --closed --path "$mode" --reroute mode="$mode" --reroute 'routed>0' \
        --reroute fallback=0 --reroute shadow_fail=0 --reroute off_reason=
}

for s in "${TLS_SUITES[@]}"; do
    read -r proto suite cipher <<<"$s"
    if ! tls_server_start "$proto" "$suite"; then
        fail "reroute-matrix $suite: openssl s_server did not start"
        continue
    fi
    for c in "${CLIENTS[@]}"; do
        if ! tls_client_ok "$c"; then
            skip "reroute-matrix $c $suite: $TLS_CLIENT_SKIP"
            continue
        fi
        p=$d/$c.$suite
        tls_client "$c" "$TLS_PORT" r.bin "$p.plain"
        if [ "$(cat "$p.plain.rc")" != 0 ] || [ "$(tls_sha "$p.plain.body")" != "$want_sha" ]; then
            fail "reroute-matrix $c $suite: download without the preload failed" \
                "(exit $(cat "$p.plain.rc")): $(head -c 200 "$p.plain.err")"
            continue
        fi
        for m in "${MODES[@]}"; do
            if ! tls_mode_ok "$m"; then
                skip "reroute-matrix $m $c $suite: $TLS_MODE_SKIP"
                continue
            fi
            check_mode "$c" "$proto" "$suite" "$cipher" "$m"
        done
    done
    tls_server_stop
done
