# tests/lib-a64tls.sh: loopback TLS between the sysroot's arm64 `openssl s_server -WWW` and
# `openssl s_client`, both under qemu, for the aarch64-* cases. Source after tests/lib.sh.
# shellcheck shell=bash
#
#   a64_init DIR                   certificate (host openssl: fixtures only) and DIR/www
#   a64_server PROTO SUITE [VAR=VAL...]   start s_server; sets A64_PORT, A64_SRV
#   a64_server_stop                stop it (every server is also stopped on exit)
#   a64_get PREFIX FILE [traced] [VAR=VAL...]   download FILE with s_client; leaves
#                                  PREFIX.body, .out, .err, .rc; "traced" preloads tlsmeter
#                                  with TLSMETER_OUT=PREFIX.%p.jsonl

A64_PIDS=()

a64_cleanup() {
    local pid
    for pid in "${A64_PIDS[@]}"; do
        kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    done
    A64_PIDS=()
    return 0
}
trap a64_cleanup EXIT

a64_init() {
    A64_DIR=$1
    mkdir -p "$A64_DIR/www"
    # P-256: key generation and the handshake stay cheap under emulation.
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj /CN=localhost -keyout "$A64_DIR/key.pem" -out "$A64_DIR/cert.pem" 2>/dev/null
}

# a64_server PROTO SUITE [VAR=VAL...]: serves until stopped. Starting one costs ~0.5-1 s of
# emulation, a connection ~0.5 s (the handshake): cases reuse a server for several gets.
a64_server() {
    local proto=$1 suite=$2 log=$A64_DIR/server.log opts
    shift 2
    case $proto in
    1.3) opts=(-tls1_3 -ciphersuites "$suite") ;;
    1.2) opts=(-tls1_2 -cipher "$suite") ;;
    esac
    : >"$log"
    # Port 0: the kernel picks a free one and s_server prints it ("ACCEPT 127.0.0.1:PORT").
    # -WWW serves the current directory; $! of bg_target is qemu itself.
    local here=$PWD
    cd "$A64_DIR/www" || return 1
    bg_target "$@" openssl s_server -accept 127.0.0.1:0 -no_dhe \
        -cert ../cert.pem -key ../key.pem -WWW "${opts[@]}" </dev/null >"$log" 2>&1
    A64_SRV=$!
    cd "$here" || return 1
    A64_PIDS+=("$A64_SRV")
    for _ in $(seq 200); do
        A64_PORT=$(sed -n 's/^ACCEPT .*:\([0-9]*\)$/\1/p' "$log")
        [ -n "$A64_PORT" ] && return 0
        kill -0 "$A64_SRV" 2>/dev/null || break
        sleep 0.05
    done
    echo "a64_server: no ACCEPT line: $(head -c 300 "$log")" >&2
    return 1
}

# a64_get PREFIX FILE [traced] [VAR=VAL...]: bounded by 120 s; the body is what follows the HTTP
# header s_server -WWW sends.
a64_get() {
    local p=$1 file=$2 traced=
    shift 2
    if [ "${1-}" = traced ]; then
        shift
        traced=1
        set -- LD_PRELOAD="$TLSM_PRELOAD" TLSMETER_OUT="$p.%p.jsonl" "$@"
    fi
    printf 'GET /%s HTTP/1.0\r\n\r\n' "$file" >"$p.req"
    target_cmd "$@" openssl s_client -connect "127.0.0.1:$A64_PORT" -quiet \
        -CAfile "$A64_DIR/cert.pem" -verify_return_error -servername localhost
    timeout -k 5 120 "${TARGET_CMD[@]}" <"$p.req" >"$p.out" 2>"$p.err"
    echo $? >"$p.rc"
    [ -n "$traced" ] && tlsm_jsonl "$p.%p.jsonl" # format 2 as JSON Lines, for the cases' greps
    python3 -c 'import sys
d = open(sys.argv[1], "rb").read()
i = d.find(b"\r\n\r\n")
open(sys.argv[2], "wb").write(d[i + 4:] if i >= 0 else b"")' "$p.out" "$p.body"
}

a64_server_stop() {
    [ -n "${A64_SRV:-}" ] || return 0
    kill "$A64_SRV" 2>/dev/null
    wait "$A64_SRV" 2>/dev/null
    A64_SRV=
    return 0
}

a64_sha() {
    sha256sum <"$1" | cut -d' ' -f1
}
