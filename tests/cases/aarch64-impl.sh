#!/usr/bin/env bash
# aarch64-impl: the arm64 decoding of the impl event (aese/aesd, pmull .1q vs .8h, tbl) under
# qemu: the arm64 `openssl s_client` (TLS 1.3 AES-128-GCM) traced with
#   default caps        aes armv8, ghash pmull (stitched kernel), analyzer class hardware
#   OPENSSL_armcap=1    NEON only: aes vpaes, ghash 4bit (gcm_ghash_neon is 32-bit ARM's
#                       only), class table (the slower half)
#   OPENSSL_armcap=0    aes table, ghash 4bit, class table
# each checked against OpenSSL's pairing rules on the instance's own OPENSSL_armcap word
# (tests/tools/implcheck.py rules). Time is never used (qemu).
# tlsm-arch: aarch64
. "$TLSM_TOP/tests/lib.sh"
. "$TLSM_TOP/tests/lib-a64tls.sh"
unset OPENSSL_armcap

name=aarch64-impl
if [ ! -f "$TLSM_PRELOAD" ] || [ ! -x "$O/tlsmeter-analyze" ]; then
    fail "$name: cross build incomplete ($TLSM_PRELOAD, $O/tlsmeter-analyze)"
    exit 0
fi
d=$(case_dir)
a64_init "$d" || { fail "$name: no certificate"; exit 0; }
head -c 65536 /dev/urandom >"$d/www/data"
CHECK=(python3 "$TLSM_TOP/tests/tools/implcheck.py")
a64_server 1.3 TLS_AES_128_GCM_SHA256 || { fail "$name: server did not start"; exit 0; }

# run LABEL CLASS DETAIL-WORD [VAR=VAL...]
run() {
    local label=$1 cls=$2 word=$3 p=$d/$1 traces why
    shift 3
    a64_get "$p" data traced "$@"
    traces=("$p".*.jsonl)
    if [ "$(cat "$p.rc")" != 0 ] || [ ! -s "${traces[0]}" ]; then
        fail "$name $label: download or trace missing (exit $(cat "$p.rc")): $(head -c 200 "$p.err")"
        return
    fi
    run_target "$O/tlsmeter-analyze" --json "${traces[0]}" >"$p.json" 2>"$p.analyze.err"
    if ! why=$("${CHECK[@]}" rules "${traces[0]}"); then
        fail "$name $label: $why"
    elif ! why=$("${CHECK[@]}" report "$p.json" AES-128-GCM "$cls" --has "$word"); then
        fail "$name $label: $why"
    else
        pass "$name $label: $why"
    fi
}

run default hardware "AES: ARMv8 AES; GHASH: PMULL"
run armcap1 table "AES: vpaes (byte shuffles) in software; GHASH: 4-bit" OPENSSL_armcap=1
run armcap0 table "AES: table" OPENSSL_armcap=0
a64_server_stop
grep -q "^FAIL $name" "$TLSM_RESULTS" || rm -rf "$d"
