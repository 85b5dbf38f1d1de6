#!/usr/bin/env bash
# tests/unit/evp/record.sh: re-record the EVP call sequences in this folder from the real
# OpenSSL (an openssl s_server -rev and s_client exchange on 127.0.0.1, each under the
# test-only recorder tests/unit/evprec.c). NAME-frag entries: the client writes a 40001-byte
# line with -max_send_frag 4096 (one SSL_write split into records of <= 4096 B), the server
# echoes it reversed. NAME-keyupdate: between two lines the client's "K" command sends a
# TLS 1.3 KeyUpdate asking for one back: the server answers with its own before its next
# record, and each side re-keys a context mid-connection in both directions. Run by hand when OpenSSL's sequences change:
#   tests/unit/evp/record.sh [OUTDIR]   (default: this folder)
# With ROOT set to an OpenSSL 1.1.1 userland (scripts/bullseye-root amd64), the same
# exchange runs that root's openssl and libraries (on the host's glibc: they need <= 2.31),
# the recorder is built against its headers, and the files are named ossl111-NAME.SIDE.evp.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
tmp=$(mktemp -d)
trap 'kill "$srv" 2>/dev/null || true; rm -rf "$tmp"' EXIT
srv=
prefix= ossl=(openssl) libs=(-lcrypto)
if [ -n "${ROOT:-}" ]; then
    lib="$ROOT/usr/lib/$(gcc -dumpmachine | sed 's/-.*-linux/-linux/')"
    prefix=ossl111-
    ossl=("$ROOT/usr/bin/openssl")
    libs=(-I"$ROOT/usr/include" -I"$ROOT/usr/include/$(basename "$lib")" -L"$lib" -lcrypto)
fi
cc -std=gnu11 -O2 -Wall -Wextra -shared -fPIC -o "$tmp/evprec.so" "$here/../evprec.c" -ldl "${libs[@]}"
payload() {
    case $1 in
    *-frag) head -c 40000 /dev/zero | tr '\0' a; echo ;;
    *-keyupdate) printf 'hello\n'; sleep 0.3; printf 'K\n'; sleep 0.3; printf 'hello\n' ;;
    *) printf 'hello\n' ;;
    esac
}
cliopts() { case $1 in *-frag) echo "-max_send_frag 4096" ;; esac; }
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
    -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
[ -n "${ROOT:-}" ] && export LD_LIBRARY_PATH="$lib" # the root's libssl for its openssl
# name  version-flag  cipher-option
while read -r name ver opt; do
    rm -f "$tmp"/*.evp
    EVPREC_OUT="$tmp/server.evp" LD_PRELOAD="$tmp/evprec.so" "${ossl[@]}" s_server -accept "127.0.0.1:$port" \
        -naccept 1 -rev -cert "$tmp/cert.pem" -key "$tmp/key.pem" "$ver" $opt >"$tmp/srv.log" 2>&1 &
    srv=$!
    for _ in $(seq 50); do grep -q ACCEPT "$tmp/srv.log" && break; sleep 0.1; done
    # shellcheck disable=SC2046
    (payload "$name"; sleep 1) | EVPREC_OUT="$tmp/client.evp" LD_PRELOAD="$tmp/evprec.so" \
        timeout 10 "${ossl[@]}" s_client -connect "127.0.0.1:$port" "$ver" $opt $(cliopts "$name") \
        >"$tmp/cli.log" 2>&1 || true
    for _ in $(seq 50); do kill -0 "$srv" 2>/dev/null || break; sleep 0.1; done
    kill "$srv" 2>/dev/null || true
    wait "$srv" 2>/dev/null || true
    srv=
    grep -q 'olleh\|aaaaaaaa' "$tmp/cli.log" || { echo "record.sh: $name: no echo from the server" >&2; exit 1; }
    for side in client server; do
        { echo "# $name $side: EVP calls libssl made ($("${ossl[@]}" version | cut -d' ' -f1-2)), by tests/unit/evp/record.sh"
          cat "$tmp/$side.evp"; } >"$out/$prefix$name.$side.evp"
    done
done <<'LIST'
tls12-aes128gcm -tls1_2 -cipher ECDHE-ECDSA-AES128-GCM-SHA256
tls13-aes128gcm -tls1_3 -ciphersuites TLS_AES_128_GCM_SHA256
tls13-chacha20 -tls1_3 -ciphersuites TLS_CHACHA20_POLY1305_SHA256
tls12-chacha20 -tls1_2 -cipher ECDHE-ECDSA-CHACHA20-POLY1305
tls13-aes256gcm-frag -tls1_3 -ciphersuites TLS_AES_256_GCM_SHA384
tls12-chacha20-frag -tls1_2 -cipher ECDHE-ECDSA-CHACHA20-POLY1305
tls13-aes128gcm-keyupdate -tls1_3 -ciphersuites TLS_AES_128_GCM_SHA256
LIST
