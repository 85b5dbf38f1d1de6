#!/usr/bin/env bash
# vendor-reach: the copies tlsmeter reaches past LD_PRELOAD, beyond what
# vendor-layouts checks (and on aarch64 too, cross-built from the sysroot's archives under
# make check-aarch64). (0) The stripped --exclude-libs,ALL vendor library is measured through
# its provider tables: records of the whole body from its lib (reach "table+plt"), masked (-m)
# its records ran table AES, with TLSMETER_CRYPTO=hw they are all rerouted; its socket reads
# through its PLT (sockread events) carry the whole record stream; output unchanged.
# (1) A copy whose provider tables do not have OpenSSL 3.0's shape (the
# stripped --exclude-libs vendor library with one function id of its AES-256-GCM table changed,
# tests/vendor/alter_table.py) is left alone: one notice naming the table, no reach, still
# named blind, output unchanged. (2) Tamper: a proxy flips one ciphertext byte of a response
# record; through a copy reached by its tables (stripped, and masked to table AES) and by its
# rewritten GOT (RTLD_DEEPBIND plugin), natively and with TLSMETER_CRYPTO=hw and =soft, vclient
# must fail exactly as without tlsmeter, and the trace must show the rejected record. (3) The
# same for TLS 1.2 (the provider's cipher entry, AAD and fixed IV as parameters).
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload vendor-reach
V=$O/vendor
BACKEND=()
if under_qemu; then
    export VENDOR_SYSROOT=$TLSM_SYSROOT
    # A vendor copy is no libcrypto.so.3 to copy for the backend, and the system one is looked
    # for with access(2), which qemu's -L does not redirect: name the sysroot's.
    BACKEND=(TLSMETER_BACKEND_LIB="$TLSM_SYSROOT/usr/lib/$(target_arch)-linux-gnu/libcrypto.so.3")
fi
if ! out=$("$TLSM_TOP/tests/vendor/build" "$V" 2>&1); then
    if echo "$out" | grep -q 'libssl-dev\|static archives'; then
        skip "vendor-reach: $out"
    else
        fail "vendor-reach: fixtures did not build: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
    fi
    exit 0
fi
tls_make_file big.bin $((2 * 1024 * 1024 + 99))
want_sha=$(tls_sha "$TLS_WWW/big.bin")
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "vendor-reach: openssl s_server did not start"
    exit 0
fi

# (0) Measured through its tables: measure TAG (TLS 1.3 and 1.2 with the server running).
MEASURE=(
    "native||native|"
    "masked|-m|native|table"
    "masked-hw|-m|hw|"
)
measure() {
for m in "${MEASURE[@]}"; do
    IFS='|' read -r name args mode aes <<<"$m"
    if ! tls_mode_ok "$mode"; then
        skip "vendor-reach measured$1 $name: $TLS_MODE_SKIP"
        continue
    fi
    # shellcheck disable=SC2206
    cmd=("$V/stripall/vclient" -p "$TLS_PORT" -c "$TLS_CERT" -f big.bin $args)
    p=$d/m${1// /}-$name
    tls_run "$p.plain" "" "${cmd[@]}"
    TLS_ENV=(TLSMETER_CRYPTO=$mode "${BACKEND[@]}")
    tls_run "$p.traced" "$p.%p.jsonl" "${cmd[@]}"
    TLS_ENV=()
    tls_traces "$p.*.jsonl"
    if ! why=$(tls_same_run x "$p.plain" "$p.traced"); then
        fail "vendor-reach measured$1 $name: $why"
    elif ! grep -q "sha256=$want_sha" "$p.traced.out"; then
        fail "vendor-reach measured$1 $name: wrong body: $(head -c 200 "$p.traced.out")"
    elif [ "${#TRACES[@]}" -ne 1 ]; then
        fail "vendor-reach measured$1 $name: ${#TRACES[@]} traces, want 1"
    else
        tls_check "vendor-reach measured$1 $name ($(target_arch), $mode)" "$TLSM_PY" - "${TRACES[0]}" \
            "$mode" "$aes" "$((2 * 1024 * 1024 + 99))" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
mode, aes, body = sys.argv[2], sys.argv[3], int(sys.argv[4])
libs = {e["id"]: e for e in ev if e["ev"] == "lib"}
v = [l for l in libs.values() if l["path"].endswith("stripall/libvendor.so")]
assert len(v) == 1 and v[0].get("reach") == "table+plt", "vendor lib events %r" % v
recs = [e for e in ev if e["ev"] == "rec" and e.get("dir", "in") == "in" and e["type"] == 23]
pt = sum(r["pt"] for r in recs if r["tag_ok"])
assert pt >= body, "records carry %d bytes of plaintext, the body is %d" % (pt, body)
paths = {r["path"] for r in recs}
assert paths == {mode}, "record paths %s, want %s" % (paths, mode)
if mode == "native":
    assert {r["lib"] for r in recs} == {v[0]["id"]}, "records not from the vendor copy"
if aes:
    impls = {e["id"]: e for e in ev if e["ev"] == "impl"}
    got = {impls.get(r.get("impl"), {}).get("aes") for r in recs}
    assert got == {aes}, "records ran AES %s, want %s" % (got, aes)
sock = [e for e in ev if e["ev"] == "sockread"]
wire = sum(e["got"] for e in sock if e["got"] > 0)
assert {e["lib"] for e in sock} == {v[0]["id"]}, "sockread libs %s" % {e["lib"] for e in sock}
assert wire >= body + 5 * len(recs), "socket reads returned %d bytes for %d of plaintext" % (wire, pt)
print("ok %d records, %d bytes, path %s; %d socket reads, %d bytes" % (len(recs), pt, mode,
                                                                     len(sock), wire))
PY
    fi
done
}
measure ""

# (1) The altered table.
A=$d/altered
mkdir -p "$A"
if ! msg=$("$TLSM_PY" "$TLSM_TOP/tests/vendor/alter_table.py" "$V/stripall/libvendor.so" \
    "$A/libvendor.so" 2>&1); then
    fail "vendor-reach altered: $msg"
else
    cp "$V/stripall/vclient" "$A/vclient"
    cmd=("$A/vclient" -p "$TLS_PORT" -c "$TLS_CERT" -f big.bin)
    tls_run "$d/alt.plain" "" "${cmd[@]}"
    tls_run "$d/alt.traced" "$d/alt.%p.jsonl" "${cmd[@]}"
    tls_traces "$d/alt.*.jsonl"
    if ! why=$(tls_same_run x "$d/alt.plain" "$d/alt.traced"); then
        fail "vendor-reach altered: $why"
    elif ! grep -q "sha256=$want_sha" "$d/alt.traced.out"; then
        fail "vendor-reach altered: wrong body: $(head -c 200 "$d/alt.traced.out")"
    elif ! grep -q "^tlsmeter: .*altered/libvendor.so holds OpenSSL 3.*provider tables do not have OpenSSL 3.0's shape (AES-256-GCM dispatch table at +0x[0-9a-f]*: entry [0-9]* has function id 15" "$d/alt.traced.err"; then
        fail "vendor-reach altered: no notice naming the altered table: $(grep -m2 '^tlsmeter:' "$d/alt.traced.err" | head -c 400)"
    elif [ "${#TRACES[@]}" -ne 1 ]; then
        fail "vendor-reach altered: ${#TRACES[@]} traces, want 1"
    else
        tls_check "vendor-reach altered: ${msg%% (*}; left alone (notice, no records, blind)" \
            "$TLSM_PY" - "${TRACES[0]}" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert not [e for e in ev if e["ev"] == "rec"], "records from a copy that was to be left alone"
assert not [e for e in ev if e["ev"] == "lib" and e.get("reach")], "a lib event with reach"
b = [e for e in ev if e["ev"] == "blind" and e["path"].endswith("altered/libvendor.so")]
assert b and "no_exports" in b[0]["reasons"], "no blind event for the altered copy: %r" % b
PY
    fi
fi

# (2) Tamper through reached copies: tamper TAG NAMES-REGEX, with the proxy running.
TAMPER=(
    "table|$V/stripall/vclient|"
    "table-masked|$V/stripall/vclient|-m"
    "got|$V/plugin/vclient|-d -l $V/first/libvendor.so"
)
tamper() {
for t in "${TAMPER[@]}"; do
    IFS='|' read -r name prog args <<<"$t"
    [[ $name =~ $2 ]] || continue
    if [[ $args == *-d* && ${TLSM_SAN:-} == *address* ]]; then
        skip "vendor-reach tamper$1 $name: vclient -d dlopens RTLD_DEEPBIND, which ASan refuses (google/sanitizers#611)"
        continue
    fi
    # shellcheck disable=SC2206
    cmd=("$prog" -p "$PROXY_PORT" -c "$TLS_CERT" -f big.bin $args)
    p=$d/tamper${1// /}-$name
    tls_run "$p.plain" "" "${cmd[@]}"
    if [ "$(cat "$p.plain.rc")" = 0 ]; then
        fail "vendor-reach tamper$1 $name: vclient accepted a tampered record without the preload (test is broken)"
        continue
    fi
    for mode in native hw soft; do
        if ! tls_mode_ok "$mode"; then
            skip "vendor-reach tamper$1 $name $mode: $TLS_MODE_SKIP"
            continue
        fi
        n0=$(tls_proxy_flips)
        TLS_ENV=(TLSMETER_CRYPTO=$mode "${BACKEND[@]}")
        tls_run "$p.$mode" "$p.$mode.%p.jsonl" "${cmd[@]}"
        TLS_ENV=()
        tls_traces "$p.$mode.*.jsonl"
        if [ "$(tls_proxy_flips)" -ne $((n0 + 1)) ]; then
            fail "vendor-reach tamper$1 $name $mode: the proxy flipped $(($(tls_proxy_flips) - n0)) records, want 1"
        elif ! why=$(tls_same_run x "$p.plain" "$p.$mode"); then
            fail "vendor-reach tamper$1 $name $mode: $why"
        elif [ "${#TRACES[@]}" -ne 1 ]; then
            fail "vendor-reach tamper$1 $name $mode: ${#TRACES[@]} traces, want 1"
        else
            TLS_PASS_NOTE="exit $(cat "$p.plain.rc") as without tlsmeter" \
                tls_check "vendor-reach tamper$1 $name $mode" "$TLSM_PY" - "${TRACES[0]}" "$mode" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
bad = [e for e in ev if e["ev"] == "rec" and e["tag_ok"] is False]
assert len(bad) == 1, "want one rec with tag_ok false, got %d" % len(bad)
assert bad[0]["path"] == sys.argv[2], "rejected record on path %s" % bad[0]["path"]
libs = {e["id"]: e for e in ev if e["ev"] == "lib"}
reach = [l.get("reach") for l in libs.values() if l.get("role", "app") == "app"]
assert any(reach), "no lib event with reach: %r" % reach
PY
        fi
    done
done
}
if ! tls_proxy_start 1.3; then
    fail "vendor-reach tamper: tamper proxy did not start: $(head -c 300 "$PROXY_LOG")"
    exit 0
fi
tamper "" .
tls_stop_pid "$PROXY_PID"
tls_server_stop

# (3) TLS 1.2 (EVP_Cipher: the provider's cipher entry, the AAD and fixed IV as parameters):
# the stripped copy measured and tampered with again.
if ! tls_server_start 1.2 ECDHE-RSA-AES128-GCM-SHA256; then
    fail "vendor-reach TLS 1.2: openssl s_server did not start"
    exit 0
fi
measure " tls1.2"
if ! tls_proxy_start 1.2; then
    fail "vendor-reach TLS 1.2 tamper: tamper proxy did not start: $(head -c 300 "$PROXY_LOG")"
    exit 0
fi
tamper " tls1.2" '^table'
