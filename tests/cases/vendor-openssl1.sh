#!/usr/bin/env bash
# vendor-openssl1: a process with an OpenSSL copy older than 1.1.1 (1.1.1 itself is
# traced: openssl111-*.sh). tests/fixtures/openssl1/fake11.c stands in: a libssl.so.1.1 whose
# OpenSSL_version says 1.0.2u (no OPENSSL_version_major) and whose SSL_read makes libssl's
# per-record EVP calls through its PLT, with EVP_CIPHER_get_nid/EVP_CIPHER_nid naming
# AES-128-GCM (without the old-ABI gate the preload writes a rec event per call: checked when
# the gate was written). It must be left alone: same output, the EVP hooks fire and only forward (no rec event), one notice on
# stderr, the lib event says left_alone, a blind event says openssl_1, the report names it.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload vendor-openssl1
src=$TLSM_TOP/tests/fixtures/openssl1
if ! cc -shared -fPIC -O2 -Wl,-soname,libssl.so.1.1 -o "$d/libssl.so.1.1" "$src/fake11.c" ||
    ! cc -O2 -o "$d/app11" "$src/app11.c" "$d/libssl.so.1.1" -Wl,-rpath,"$d"; then
    fail "vendor-openssl1: fixture did not build"
    exit 0
fi
tls_run "$d/plain" "" "$d/app11"
tls_run "$d/traced" "$d/t.%p.jsonl" "$d/app11"
if ! why=$(tls_same_run x "$d/plain" "$d/traced"); then
    fail "vendor-openssl1: $why"
    exit 0
fi
n=$(tls_notes "$d/traced.err")
if [ "$n" != 1 ] || ! grep -q '^tlsmeter: .*libssl.so.1.1 is OpenSSL 1.0.2u .*leaves this copy alone' "$d/traced.err"; then
    fail "vendor-openssl1: want one notice naming the 1.1 copy, got $n: $(head -c 400 "$d/traced.err")"
else
    pass "vendor-openssl1: output unchanged, one notice: $(grep '^tlsmeter:' "$d/traced.err" | head -c 160)"
fi
tls_traces "$d/t.*.jsonl"
if [ "${#TRACES[@]}" -ne 1 ]; then
    fail "vendor-openssl1: ${#TRACES[@]} traces, want 1"
    exit 0
fi
tls_check "vendor-openssl1 trace: hooks forwarded, nothing tracked, left_alone, blind openssl_1" \
    "$TLSM_PY" -c 'import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
kinds = [e["ev"] for e in ev]
assert "rec" not in kinds, "rec events from the 1.1 copy"
end = ev[-1]
assert end["ev"] == "end" and end["hooks"]["EVP_CipherUpdate"] == 32, end["hooks"]
libs = [e for e in ev if e["ev"] == "lib"]
assert len(libs) == 1 and libs[0]["left_alone"] == "openssl_1", libs
assert libs[0]["version"].startswith("OpenSSL 1.0.2u") and libs[0]["abi"] == "old", libs[0]
bl = [e for e in ev if e["ev"] == "blind"]
assert len(bl) == 1 and bl[0]["reasons"] == ["openssl_1"], bl
assert end["blind"] == [{"path": bl[0]["path"], "what": "tls", "reasons": ["openssl_1"]}], end["blind"]
' "${TRACES[0]}"
"$O/tlsmeter-analyze" "${TRACES[0]}" >"$d/report" 2>&1
if grep -q '^  \* \[blind-copy\] .*libssl.so.1.1 holds OpenSSL 1.0.2u .*OpenSSL 1.0' "$d/report"; then
    pass "vendor-openssl1: the report names the old copy (blind-copy)"
else
    fail "vendor-openssl1: the report does not name the old copy: $(grep -F '[' "$d/report" | head -c 400)"
fi
