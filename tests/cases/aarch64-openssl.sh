#!/usr/bin/env bash
# aarch64-openssl: the sysroot's arm64 OpenSSL talks TLS under qemu (s_server + s_client on
# loopback) for TLS 1.2/1.3 x AES-128-GCM/ChaCha20, at its default capabilities (AES+PMULL)
# and with OPENSSL_armcap=0, and every download arrives intact. The ground the traced
# aarch64 cases stand on: when this fails, the harness is broken, not tlsmeter.
# tlsm-arch: aarch64
. "$TLSM_TOP/tests/lib.sh"
. "$TLSM_TOP/tests/lib-a64tls.sh"
unset OPENSSL_armcap

d=$(case_dir)
a64_init "$d" || { fail "aarch64-openssl: no certificate"; exit 0; }
head -c 1048576 /dev/urandom >"$d/www/data"
want=$(a64_sha "$d/www/data")

# OPENSSL_CPU_INFO of the guest: qemu's CPU model has the crypto extensions, so the default
# run takes the hardware path (AES bit 2, PMULL bit 5) and the masked run the table path.
caps_of() {
    run_target "$@" openssl version -c | sed -n 's/.*OPENSSL_armcap=\(0x[0-9a-fA-F]*\).*/\1/p'
}
has_aes_pmull() {
    local c=$1
    [ -n "$c" ] && (((c & 0x24) == 0x24))
}
c=$(caps_of)
check "aarch64-openssl caps default: $c has AES+PMULL" has_aes_pmull "$c"
c=$(caps_of OPENSSL_armcap=0)
check "aarch64-openssl caps OPENSSL_armcap=0: $c is empty" test "$c" = 0x0

same_body() {
    [ "$(cat "$1.rc")" = 0 ] || { echo "s_client exit $(cat "$1.rc"): $(tail -n 3 "$1.err")"; return 1; }
    local got
    got=$(a64_sha "$1.body")
    [ "$got" = "$want" ] || { echo "sha256 $got, want $want ($(stat -c %s "$1.body") bytes)"; return 1; }
}

for s in "1.3 TLS_AES_128_GCM_SHA256" "1.3 TLS_CHACHA20_POLY1305_SHA256" \
    "1.2 ECDHE-ECDSA-AES128-GCM-SHA256" "1.2 ECDHE-ECDSA-CHACHA20-POLY1305"; do
    # shellcheck disable=SC2086 # "PROTO SUITE" into $1 $2
    set -- $s
    if ! a64_server "$1" "$2"; then
        fail "aarch64-openssl TLS $1 $2: server did not start"
        continue
    fi
    for caps in default 0; do
        env=()
        [ "$caps" = 0 ] && env=(OPENSSL_armcap=0)
        name="aarch64-openssl TLS $1 $2 armcap=$caps"
        p=$d/get.$1.$2.$caps
        t0=$(date +%s%N)
        a64_get "$p" data "${env[@]}"
        echo "  $name: $((($(date +%s%N) - t0) / 1000000)) ms under qemu"
        check "$name: sha256" same_body "$p"
    done
    a64_server_stop
done
grep -q '^FAIL aarch64-openssl' "$TLSM_RESULTS" || rm -rf "$d"
