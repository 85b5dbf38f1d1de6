#!/usr/bin/env bash
# core-tamper: a proxy flips one ciphertext byte of a response record. Every client must fail
# the same way with and without the preload, and the trace must show a record with
# tag_ok:false (TLS 1.3 AES-GCM and ChaCha20, TLS 1.2 AES-GCM: three different EVP sequences).
# Under qemu: s_client and our C client only.
# tlsm-arch: x86_64 aarch64
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload core-tamper

tls_make_file big.bin $((1024 * 1024 + 777))
CLIENTS=(curl py sclient tlsget)
# A release's Python under qemu-user is slow to start (its arm64 runs: clients-classes).
TLS_QEMU_PY_ELSEWHERE=clients-classes
CONFIGS=(
    "1.3 TLS_AES_128_GCM_SHA256"
    "1.3 TLS_CHACHA20_POLY1305_SHA256"
    "1.2 ECDHE-RSA-AES256-GCM-SHA384"
)

check_one() {
    local c=$1 proto=$2 suite=$3 name="core-tamper $1 $3" p=$d/$1.$3 why n0
    n0=$(tls_proxy_flips)
    tls_client "$c" "$PROXY_PORT" big.bin "$p.plain"
    tls_client "$c" "$PROXY_PORT" big.bin "$p.traced" "$p.trace.%p.jsonl"
    if [ "$(tls_proxy_flips)" -ne $((n0 + 2)) ]; then
        fail "$name: the proxy flipped $(($(tls_proxy_flips) - n0)) records in two runs, want 2"
        return
    fi
    if [ "$(cat "$p.plain.rc")" = 0 ]; then
        fail "$name: the client accepted a tampered record without the preload (test is broken)"
        return
    fi
    if ! why=$(tls_same_run "$name" "$p.plain" "$p.traced"); then
        fail "$name: $why"
        return
    fi
    tls_traces "$p.trace.*.jsonl"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "$name: ${#TRACES[@]} trace files, want 1"
        return
    fi
    TLS_PASS_NOTE="exit $(cat "$p.plain.rc") both ways" \
        tls_trace_check "$name" "${TRACES[0]}" --tamper --tls "$proto" --conns 1
}

for s in "${CONFIGS[@]}"; do
    read -r proto suite <<<"$s"
    if ! tls_server_start "$proto" "$suite"; then
        fail "core-tamper $suite: openssl s_server did not start"
        continue
    fi
    if ! tls_proxy_start "$proto"; then
        fail "core-tamper $suite: tamper proxy did not start: $(head -c 300 "$PROXY_LOG")"
        continue
    fi
    for c in "${CLIENTS[@]}"; do
        if ! tls_client_ok "$c"; then
            skip "core-tamper $c $suite: $TLS_CLIENT_SKIP"
            continue
        fi
        check_one "$c" "$proto" "$suite"
    done
    tls_stop_pid "$PROXY_PID"
    tls_server_stop
done
