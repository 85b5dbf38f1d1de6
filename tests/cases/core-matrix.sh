#!/usr/bin/env bash
# core-matrix: four real clients x five suites over loopback TLS. With the preload each download
# must be byte-for-byte the same (body, stdout, stderr, exit code) and its trace must account
# for every byte the client read and every application-data record.
# tlsm-userland: trixie forky
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload core-matrix

# 4 MiB + an odd tail: the last record is partial.
BODY=$((4 * 1024 * 1024 + 12345))
tls_make_file big.bin "$BODY"
want_sha=$(tls_sha "$TLS_WWW/big.bin")

# curl (libcurl), Python ssl (libssl dlopened RTLD_LOCAL), openssl s_client, our C client.
CLIENTS=(curl py sclient tlsget)

check_one() {
    local c=$1 proto=$2 suite=$3 cipher=$4 name="core-matrix $1 $3" p=$d/$1.$3 why
    tls_client "$c" "$TLS_PORT" big.bin "$p.plain"
    tls_client "$c" "$TLS_PORT" big.bin "$p.traced" "$p.trace.%p.jsonl"
    if [ "$(cat "$p.plain.rc")" != 0 ] || [ "$(tls_sha "$p.plain.body")" != "$want_sha" ]; then
        fail "$name: download without the preload failed (exit $(cat "$p.plain.rc")):" \
            "$(head -c 200 "$p.plain.err")"
        return
    fi
    if ! why=$(tls_same_run "$name" "$p.plain" "$p.traced"); then
        fail "$name: $why"
        return
    fi
    tls_traces "$p.trace.*.jsonl"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "$name: ${#TRACES[@]} trace files, want 1 (stderr: $(head -c 200 "$p.traced.err"))"
        return
    fi
    tls_trace_check "$name" "${TRACES[0]}" --got "$(cat "$p.traced.got")" --body "$BODY" \
        --full-read --cipher "$cipher" --tls "$proto" --proto "TLSv$proto" --suite "$suite" \
        --conns 1 --closed
}

for s in "${TLS_SUITES[@]}"; do
    read -r proto suite cipher <<<"$s"
    if ! tls_server_start "$proto" "$suite"; then
        fail "core-matrix $suite: openssl s_server did not start"
        continue
    fi
    for c in "${CLIENTS[@]}"; do
        if [ "$c" = curl ] && ! tls_curl_ok; then
            skip "core-matrix curl $suite: $TLS_CURL_SKIP"
            continue
        fi
        check_one "$c" "$proto" "$suite" "$cipher"
    done
    tls_server_stop
done
