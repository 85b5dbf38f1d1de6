#!/usr/bin/env bash
# enc-tamper: a proxy flips one ciphertext byte of a record the client sends (an upload to
# tests/tools/hashserver.py). The server must reject that record exactly as without tlsmeter:
# the same error (bad record MAC) for the traced client, natively and with TLSMETER_CRYPTO=hw
# (the record sealed by the backend is tampered the same way), and the traced client's exit
# code the same as untraced (curl: 52 "empty reply", 55 "send failed" or 56 "receive failed",
# whichever of its calls meets the server's alert or close first: a race untraced runs show
# too, so any of the three is accepted). TLS 1.3 AES-GCM and ChaCha20, TLS 1.2 AES-GCM; curl, Python and
# s_client (under ASan and qemu: s_client only).
# tlsm-arch: x86_64 aarch64
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload enc-tamper

BODY=$((2 * 1024 * 1024 + 4321))
head -c "$BODY" /dev/urandom >"$d/up.bin"
tls_hashserver_start "$d" "enc-tamper" || exit 0
pf=$d/proxy.port
"$TLSM_PY" "$TLSM_TOOLS/tamper_proxy.py" --target-port "$TLS_PORT" --tls 1.3 --sending client \
    --port-file "$pf" --max-conns 64 --timeout 600 2>"$d/proxy.log" &
TLS_PIDS+=("$!")
for _ in $(seq 100); do
    [ -s "$pf" ] && break
    sleep 0.05
done
PROXY_PORT=$(cat "$pf" 2>/dev/null)
if [ -z "$PROXY_PORT" ]; then
    fail "enc-tamper: tamper proxy did not start: $(head -c 300 "$d/proxy.log")"
    exit 0
fi

# up KIND PROTO SUITE PREFIX TRACE: one upload through the proxy.
up() {
    local kind=$1 proto=$2 suite=$3 p=$4 trace=$5
    case $kind.$proto in
    curl.1.3) tls_run "$p" "$trace" curl -sS --cacert "$TLS_CERT" --tlsv1.3 --tls13-ciphers "$suite" \
        --data-binary "@$d/up.bin" "https://127.0.0.1:$PROXY_PORT/" ;;
    curl.1.2) tls_run "$p" "$trace" curl -sS --cacert "$TLS_CERT" --tlsv1.2 --tls-max 1.2 \
        --ciphers "$suite" --data-binary "@$d/up.bin" "https://127.0.0.1:$PROXY_PORT/" ;;
    py.*) tls_run "$p" "$trace" "$TLSM_PY" "$TLSM_TOOLS/pyupload.py" --port "$PROXY_PORT" \
        --cafile "$TLS_CERT" --file "$d/up.bin" --tls "$proto" --cipher "$suite" ;;
    sclient.*)
        local o=(-tls1_3 -ciphersuites "$suite")
        [ "$proto" = 1.2 ] && o=(-tls1_2 -cipher "$suite")
        { printf 'RAW %d\n' "$BODY"; cat "$d/up.bin"; } >"$p.req"
        tls_run "$p" "$trace" openssl s_client -connect "127.0.0.1:$PROXY_PORT" -quiet \
            -nocommands -CAfile "$TLS_CERT" -servername localhost "${o[@]}" <"$p.req"
        ;;
    esac
}

# server_error: the error text of the server's newest connection line ("" if it succeeded).
server_error() {
    tail -n 1 "$d/server.log" | sed -n 's/^conn [0-9]*: error: //p'
}

# same_exit KIND A B: the two exit codes tell the same failure.
same_exit() {
    [ "$2" = "$3" ] && return 0
    [ "$1" = curl ] && [[ $2 =~ ^5[256]$ ]] && [[ $3 =~ ^5[256]$ ]]
}

CONFIGS=(
    "1.3 TLS_AES_128_GCM_SHA256"
    "1.3 TLS_CHACHA20_POLY1305_SHA256"
    "1.2 ECDHE-RSA-AES256-GCM-SHA384"
)
MODES=(native)
tls_mode_ok hw && MODES+=(hw)
# A release's Python under qemu-user is slow to start (its arm64 runs: clients-classes).
TLS_QEMU_PY_ELSEWHERE=clients-classes
for c in curl py sclient; do
    if ! tls_client_ok "$c"; then
        skip "enc-tamper $c: $TLS_CLIENT_SKIP"
        continue
    fi
    for s in "${CONFIGS[@]}"; do
        read -r proto suite <<<"$s"
        p=$d/$c.$suite
        n0=$(grep -c flipped "$d/proxy.log")
        up "$c" "$proto" "$suite" "$p.plain" ""
        want=$(server_error)
        if [ -z "$want" ] || [ "$(grep -c flipped "$d/proxy.log")" -ne $((n0 + 1)) ]; then
            fail "enc-tamper $c $suite: untraced, the server did not reject a flipped record (test is broken): $(tail -n 2 "$d/server.log" "$d/proxy.log" | tr '\n' ' ')"
            continue
        fi
        for m in "${MODES[@]}"; do
            TLS_ENV=("TLSMETER_CRYPTO=$m")
            up "$c" "$proto" "$suite" "$p.$m" "$p.$m.trace.%p.jsonl"
            TLS_ENV=()
            got=$(server_error)
            if [ "$got" != "$want" ]; then
                fail "enc-tamper $c $suite $m: the server said '$got' traced, '$want' untraced"
            elif ! same_exit "$c" "$(cat "$p.$m.rc")" "$(cat "$p.plain.rc")"; then
                fail "enc-tamper $c $suite $m: client exit $(cat "$p.$m.rc") traced, $(cat "$p.plain.rc") untraced"
            elif ! grep -q '"dir":"out"' "$p.$m".trace.*.jsonl; then
                fail "enc-tamper $c $suite $m: no encrypted record in the trace"
            else
                pass "enc-tamper $c $suite $m: the server rejects the flipped record as untraced ($want; client exit $(cat "$p.plain.rc"))"
            fi
        done
    done
done
