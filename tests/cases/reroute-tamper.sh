#!/usr/bin/env bash
# reroute-tamper: a proxy flips one ciphertext byte of a response record (TLS 1.3 AES-GCM and
# ChaCha20-Poly1305, TLS 1.2 AES-GCM). Natively traced, with TLSMETER_CRYPTO=hw and with =soft,
# every client must fail exactly as it does without the preload (exit code, stderr, stdout),
# after the same number of bytes, and the trace must show the rejected record (tag_ok false,
# no plaintext) on the chosen path. Under qemu (and curl under ASan): the clients that run there.
# tlsm-arch: x86_64 aarch64
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload reroute-tamper

tls_make_file t.bin $((512 * 1024 + 777))
CLIENTS=(curl py sclient)
# A release's Python under qemu-user is slow to start: the case took 226 s with it on arm64.
TLS_QEMU_PY_ELSEWHERE=clients-classes
MODES=(native hw soft)
CONFIGS=(
    "1.3 TLS_AES_128_GCM_SHA256"
    "1.3 TLS_CHACHA20_POLY1305_SHA256"
    "1.2 ECDHE-RSA-AES256-GCM-SHA384"
)

# check_mode CLIENT PROTO SUITE MODE: one tampered download under MODE against the plain one.
check_mode() {
    local c=$1 proto=$2 suite=$3 mode=$4 p=$d/$1.$3 why n0 got=()
    local name="reroute-tamper $mode $c $suite"
    n0=$(tls_proxy_flips)
    TLS_ENV=("TLSMETER_CRYPTO=$mode")
    tls_client "$c" "$PROXY_PORT" t.bin "$p.$mode" "$p.$mode.trace.%p.jsonl"
    TLS_ENV=()
    if [ "$(tls_proxy_flips)" -ne $((n0 + 1)) ]; then
        fail "$name: the proxy flipped $(($(tls_proxy_flips) - n0)) records, want 1"
        return
    fi
    if ! why=$(tls_same_run "$name" "$p.plain" "$p.$mode"); then
        fail "$name: $why"
        return
    fi
    # (tls_same_run compared the bodies already; the sizes make the failure message)
    if [ "$(cat "$p.plain.got")" != "$(cat "$p.$mode.got")" ] ||
        [ "$(tls_size "$p.plain.body")" != "$(tls_size "$p.$mode.body")" ]; then
        fail "$name: $(cat "$p.$mode.got") bytes ($(tls_size "$p.$mode.body") of the body)" \
            "delivered before the error, $(cat "$p.plain.got") ($(tls_size "$p.plain.body"))" \
            "without the preload"
        return
    fi
    # pyclient prints no byte count when it fails: its body is the evidence then.
    [ "$(cat "$p.$mode.got")" != 0 ] && got=(--got "$(cat "$p.$mode.got")")
    tls_traces "$p.$mode.trace.*.jsonl"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "$name: ${#TRACES[@]} trace files, want 1"
        return
    fi
    TLS_PASS_NOTE="exit $(cat "$p.plain.rc") after $(tls_size "$p.plain.body") body bytes, as plain" \
        tls_trace_check "$name" "${TRACES[0]}" --tamper --tls "$proto" --conns 1 "${got[@]}" \
        --path "$mode" --reroute mode="$mode" --reroute fallback=0
}

for s in "${CONFIGS[@]}"; do
    read -r proto suite <<<"$s"
    if ! tls_server_start "$proto" "$suite"; then
        fail "reroute-tamper $suite: openssl s_server did not start"
        continue
    fi
    if ! tls_proxy_start "$proto"; then
        fail "reroute-tamper $suite: tamper proxy did not start: $(head -c 300 "$PROXY_LOG")"
        continue
    fi
    for c in "${CLIENTS[@]}"; do
        if ! tls_client_ok "$c"; then
            skip "reroute-tamper $c $suite: $TLS_CLIENT_SKIP"
            continue
        fi
        p=$d/$c.$suite
        tls_client "$c" "$PROXY_PORT" t.bin "$p.plain"
        if [ "$(cat "$p.plain.rc")" = 0 ]; then
            fail "reroute-tamper $c $suite: the client accepted a tampered record without the" \
                "preload (test is broken)"
            continue
        fi
        for m in "${MODES[@]}"; do
            if ! tls_mode_ok "$m"; then
                skip "reroute-tamper $m $c $suite: $TLS_MODE_SKIP"
                continue
            fi
            check_mode "$c" "$proto" "$suite" "$m"
        done
    done
    tls_stop_pid "$PROXY_PID"
    tls_server_stop
done
