#!/usr/bin/env bash
# aarch64-matrix: the core matrix under qemu. The arm64 s_client, traced by the cross-built
# preload, downloads 1 MiB from the arm64 s_server for TLS 1.3 AES-128/256-GCM and ChaCha20 and
# TLS 1.2 AES-128-GCM and ChaCha20, natively and rerouted (TLSMETER_CRYPTO=hw, soft): the bytes
# are the untraced ones, and tests/tools/tracecheck.py finds a consistent trace (every byte
# the client got is in a read, suite and protocol in the conn line, the cipher in every
# record, every application record on the chosen path).
# tlsm-arch: aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
. "$TLSM_TOP/tests/lib-a64tls.sh"
unset OPENSSL_armcap
name=aarch64-matrix
if [ ! -f "$TLSM_PRELOAD" ]; then
    fail "$name: $TLSM_PRELOAD is not built"
    exit 0
fi
d=$(case_dir)
a64_init "$d" || { fail "$name: no certificate"; exit 0; }
head -c 1048576 /dev/urandom >"$d/www/data"
want=$(a64_sha "$d/www/data")

# one PROTO SUITE CIPHER MODE: a traced download and its checks.
one() {
    local proto=$1 suite=$2 cipher=$3 mode=$4 p=$d/$2.$4 t
    local label="$name TLS $proto $suite $mode"
    a64_get "$p" data traced "TLSMETER_CRYPTO=$mode"
    if [ "$(cat "$p.rc")" != 0 ] || [ "$(a64_sha "$p.body")" != "$want" ]; then
        fail "$label: download broken (exit $(cat "$p.rc"), $(stat -c %s "$p.body") bytes): $(grep -v '^depth\|^verify' "$p.err" | head -n 2 | tr '\n' ' ')"
        return
    fi
    t=("$p".*.jsonl)
    check "$label: same bytes, consistent trace" python3 "$TLSM_TOP/tests/tools/tracecheck.py" \
        "${t[0]}" --got "$(stat -c %s "$p.out")" --body 1048576 --cipher "$cipher" --tls "$proto" \
        --proto "TLSv$proto" --suite "$suite" --conns 1 --path "$mode"
}

for s in "1.3 TLS_AES_128_GCM_SHA256 AES-128-GCM" "1.3 TLS_AES_256_GCM_SHA384 AES-256-GCM" \
    "1.3 TLS_CHACHA20_POLY1305_SHA256 ChaCha20-Poly1305" \
    "1.2 ECDHE-ECDSA-AES128-GCM-SHA256 AES-128-GCM" \
    "1.2 ECDHE-ECDSA-CHACHA20-POLY1305 ChaCha20-Poly1305"; do
    # shellcheck disable=SC2086 # "PROTO SUITE CIPHER" into $1 $2 $3
    set -- $s
    if ! a64_server "$1" "$2"; then
        fail "$name TLS $1 $2: server did not start"
        continue
    fi
    for mode in native hw soft; do
        one "$1" "$2" "$3" "$mode"
    done
    a64_server_stop
done
grep -q "^FAIL $name" "$TLSM_RESULTS" || rm -rf "$d"
