#!/usr/bin/env bash
# measure-provider: an OpenSSL 3 copy's records measured at its default provider's cipher
# functions (TLSMETER_MEASURE=provider, the default) against the same downloads measured at
# the hooked EVP calls (TLSMETER_MEASURE=evp). For curl over TLS 1.3 AES-128-GCM, TLS 1.3
# ChaCha20-Poly1305 and TLS 1.2 ECDHE-RSA-AES256-GCM-SHA384, and Python's ssl (libssl loaded
# by dlopen after start): the output is unchanged and every byte the client read is in a
# record (tracecheck), both ways; the same application-data records hold the same bytes both
# ways; the copy's lib line says measured_at provider only in the first; the end line's hook
# counts are the independent witness of the binding: under provider no EVP data or GCM hook
# was called (libssl's and libcrypto's calls went straight to libcrypto) and none of them is
# listed as unfired, under evp they were; the report's class is the same both ways.
# A program that runs libssl's own per-record EVP sequence itself (tests/progs/evpbench: its
# own AES-GCM, not TLS) makes no record: a context is a record source only when libssl keys it.
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
N=measure-provider
tls_need_preload "$N"
tls_analyzer "$N"
BODY=$((4 * 1024 * 1024 + 33))
tls_make_file m.bin "$BODY"

# measured FILE: "records bytes measured_at data_hooks gcm_hooks unfired_data" of a trace.
measured() {
    "$TLSM_PY" - "$1" <<'EOF'
import json, sys
evs = [json.loads(l) for l in open(sys.argv[1])]
recs = [e for e in evs if e["ev"] == "rec" and e.get("type") == 23 and e.get("dir", "in") == "in"]
libs = [e for e in evs if e["ev"] == "lib" and e.get("has_crypto")]
end = [e for e in evs if e["ev"] == "end"][-1]
data = ["EVP_CipherUpdate", "EVP_DecryptUpdate", "EVP_CipherFinal_ex", "EVP_CIPHER_CTX_ctrl"]
gcm = ["CRYPTO_gcm128_decrypt", "CRYPTO_gcm128_decrypt_ctr32"]
print(len(recs), sum(r["pt"] for r in recs), ",".join(l.get("measured_at", "-") for l in libs),
      sum(end["hooks"].get(h, 0) for h in data), sum(end["hooks"].get(h, 0) for h in gcm),
      len([h for h in end.get("unfired", []) if h in data + gcm]))
EOF
}

# class TRACE: the report's class of the decrypted records.
class_of() {
    "$A" --json "$1" 2>/dev/null | "$TLSM_PY" -c 'import json, sys
j = json.load(sys.stdin)
print(",".join(sorted({c["impl"] for c in j.get("ciphers", [])})) or "-")'
}

one() { # KIND VERSION SUITE
    local kind=$1 ver=$2 suite=$3 p m_p m_e
    if ! tls_client_ok "$kind"; then
        skip "$N $kind $suite: $TLS_CLIENT_SKIP"
        return
    fi
    if ! tls_server_start "$ver" "$suite"; then
        fail "$N $kind $suite: openssl s_server did not start"
        return
    fi
    p=$d/$kind.$suite
    tls_client "$kind" "$TLS_PORT" m.bin "$p.plain"
    TLS_ENV=()
    tls_client "$kind" "$TLS_PORT" m.bin "$p.prov" "$p.prov.%p.jsonl"
    TLS_ENV=(TLSMETER_MEASURE=evp)
    tls_client "$kind" "$TLS_PORT" m.bin "$p.evp" "$p.evp.%p.jsonl"
    TLS_ENV=()
    tls_server_stop
    local tp te
    tp=$(ls "$p".prov.*.jsonl 2>/dev/null | head -n 1)
    te=$(ls "$p".evp.*.jsonl 2>/dev/null | head -n 1)
    if [ "$(cat "$p.plain.rc")" != 0 ] || [ -z "$tp" ] || [ -z "$te" ]; then
        fail "$N $kind $suite: a run failed or wrote no trace: $(head -c 200 "$p.plain.err")"
        return
    fi
    local why
    for w in prov evp; do
        if ! why=$(tls_same_run "$N" "$p.plain" "$p.$w"); then
            fail "$N $kind $suite ($w): $why"
            return
        fi
    done
    tls_trace_check "$N $kind $suite provider: every byte read in a record" "$tp" \
        --got "$(cat "$p.prov.got")" --body "$BODY" --full-read
    tls_trace_check "$N $kind $suite evp: every byte read in a record" "$te" \
        --got "$(cat "$p.evp.got")" --body "$BODY" --full-read
    read -r rp bp mp dp gp up <<<"$(measured "$tp")"
    read -r re be me de ge ue <<<"$(measured "$te")"
    if [ "$rp" = "$re" ] && [ "$bp" = "$be" ] && [ "$rp" -ge $((BODY / 16384)) ]; then
        pass "$N $kind $suite: $rp application-data records holding $bp bytes, the same both ways"
    else
        fail "$N $kind $suite: provider $rp records $bp bytes, evp $re records $be bytes"
    fi
    if [ "$mp" = provider ] && [ "$me" = - ] && [ "$dp" = 0 ] && [ "$up" = 0 ] &&
        [ "$de" -gt 0 ] && { [ "$gp" = 0 ] || [ "$ge" -gt 0 ]; }; then
        pass "$N $kind $suite: measured_at provider, EVP data hooks called 0 times (evp: $de), GCM hooks $gp (evp: $ge), none listed unfired"
    else
        fail "$N $kind $suite: measured_at '$mp'/'$me', EVP data hooks $dp/$de, GCM hooks $gp/$ge, unfired data/GCM hooks $up/$ue (provider/evp)"
    fi
    local cp ce
    cp=$(class_of "$tp")
    ce=$(class_of "$te")
    if [ "$cp" = "$ce" ] && [ "$cp" != - ]; then
        pass "$N $kind $suite: class $cp both ways"
    else
        fail "$N $kind $suite: class '$cp' (provider) vs '$ce' (evp)"
    fi
}

one curl 1.3 TLS_AES_128_GCM_SHA256
one curl 1.3 TLS_CHACHA20_POLY1305_SHA256
one curl 1.2 ECDHE-RSA-AES256-GCM-SHA384
one py 1.3 TLS_AES_256_GCM_SHA384

# Not TLS: libssl's record sequence made by the program itself on its own AES-GCM contexts.
if under_qemu || in_userland; then
    skip "$N evpbench: a host test program"
else
    e=$d/evpbench
    env LD_PRELOAD="$TLSM_PRELOAD" TLSMETER_FORMAT=jsonl TLSMETER_OUT="$e.%p.jsonl" \
        "$O/tests/evpbench" -n 200 1024 16384 >"$e.out" 2>"$e.err"
    t=$(ls "$e".*.jsonl 2>/dev/null | head -n 1)
    recs=$([ -n "$t" ] && grep -c '"ev":"rec"' "$t")
    if [ -n "$t" ] && [ "${recs:-0}" = 0 ] && grep -q 'records=200' "$e.out"; then
        pass "$N evpbench: 400 AES-GCM records of its own decrypted through libssl's sequence, 0 rec events"
    else
        fail "$N evpbench: trace '${t:-none}' holds ${recs:-?} rec events, want 0; $(head -c 200 "$e.err")"
    fi
fi
