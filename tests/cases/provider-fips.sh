#!/usr/bin/env bash
# provider-fips: records the OpenSSL FIPS provider decrypted are named by it. The FIPS module
# is built for real from Debian 12's OpenSSL 3.0 source (scripts/openssl-fips, cached outside
# the clone) and installed with the host's `openssl fipsinstall`; an OPENSSL_CONF activates
# fips and base with default_properties fips=yes. `openssl list -providers` under the same
# configuration is the independent check that fips is what runs. Checked: s_client's output
# and exit code unchanged by tracing; the trace has one prov event (provider fips, its version,
# module fips.so) and every record of the download names it; its impl event names code inside
# fips.so (checked against fips.so's own symbols with nm) and the report's class is that
# code's; the report has the provider verdict. The negative: the same download without the
# configuration (default provider) has no prov event, no rec.prov and no provider verdict.
# Skips, saying why, when the source cannot be fetched or the module not installed.
# tlsm-arch: x86_64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
N=provider-fips
tls_need_preload "$N"
if under_qemu || in_userland; then
    skip "$N: the FIPS module is built for the host's x86_64 OpenSSL 3.0 only"
    exit 0
fi
if conf=$("$TLSM_TOP/scripts/openssl-fips" --conf "$d" 2>"$d/fips.err"); then
    :
else
    rc=$?
    if [ "$rc" = 3 ]; then
        skip "$N: no FIPS module: $(tail -n 1 "$d/fips.err")"
    else
        fail "$N: scripts/openssl-fips failed (exit $rc): $(tail -n 3 "$d/fips.err" | tr '\n' ' ')"
    fi
    exit 0
fi
fips_so=$(sed -n 's/^module = //p' "$conf")
A=$O/tlsmeter-analyze

# The independent instrument: the providers the same configuration activates.
OPENSSL_CONF=$conf openssl list -providers >"$d/providers.txt" 2>&1
check "$N: openssl list -providers under the configuration shows fips active" \
    grep -A3 '^  fips$' "$d/providers.txt"
if grep -q '^  default$' "$d/providers.txt"; then
    fail "$N: the default provider is active under the FIPS configuration"
fi

tls_make_file big.bin $((8 * 1024 * 1024 + 77))
want=$(tls_sha "$TLS_WWW/big.bin")
if ! tls_server_start 1.3 TLS_AES_256_GCM_SHA384; then
    fail "$N: openssl s_server did not start"
    exit 0
fi

# Untraced and traced under the FIPS configuration: the same output and exit code.
TLS_ENV=(OPENSSL_CONF="$conf")
printf 'GET /big.bin HTTP/1.0\r\n\r\n' >"$d/get.req"
tls_run "$d/plain" "" env OPENSSL_CONF="$conf" openssl s_client -connect "127.0.0.1:$TLS_PORT" \
    -quiet -CAfile "$TLS_CERT" -verify_return_error -servername localhost <"$d/get.req"
tls_client sclient "$TLS_PORT" big.bin "$d/fips" "$d/fips.%p.trace"
check "$N: traced download under fips: same body" test "$(tls_sha "$d/fips.body")" = "$want"
check "$N: traced download under fips: same exit code as untraced" \
    test "$(cat "$d/fips.rc")" = "$(cat "$d/plain.rc")"
check "$N: traced download under fips: same output as untraced" cmp "$d/plain.out" "$d/fips.out"
tls_traces "$d/fips.*.trace"
T=${TRACES[0]:-}
if [ -z "$T" ]; then
    fail "$N: no trace under fips"
    exit 0
fi
"$TLSM_PY" - "$T" "$fips_so" >"$d/fips.check" 2>&1 <<'EOF'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
provs = [e for e in ev if e["ev"] == "prov"]
assert len(provs) == 1, "prov events: %r" % provs
p = provs[0]
assert p["kind"] == "provider" and p["name"] == "fips", p
assert p["full_name"] == "OpenSSL FIPS Provider" and p["version"].startswith("3.0."), p
assert p["module"] == sys.argv[2] and p["gcm_layout"] == "3.0", p
recs = [e for e in ev if e["ev"] == "rec" and e.get("dir", "in") == "in"]
assert sum(r["pt"] for r in recs) >= 8 * 1024 * 1024, "plaintext in records"
bad = [r for r in recs if r.get("prov") != p["id"]]
assert not bad, "records without prov %d: %d of %d" % (p["id"], len(bad), len(recs))
impls = {e["id"]: e for e in ev if e["ev"] == "impl"}
used = {r.get("impl") for r in recs if r["type"] == 23}
assert used and None not in used, "application records without impl: %r" % used
for i in used:
    m = impls[i]
    assert m["fn_block_module"] == sys.argv[2], m
    print(m["fn_block_off"], m.get("fn_stream_off", ""), m["aes"], m["ghash"])
EOF
check "$N: trace names provider fips on every record, impl from fips.so" test $? = 0
if [ -s "$d/fips.check" ] && ! grep -q Error "$d/fips.check"; then
    # The impl event's offsets are functions of fips.so (its own symbol table).
    read -r boff soff aes ghash <"$d/fips.check"
    nm "$fips_so" >"$d/fips.nm" 2>/dev/null
    sym() { awk -v o="$(printf '%016x' "$1")" '$1 == o {print $3; exit}' "$d/fips.nm"; }
    bsym=$(sym "$boff")
    check "$N: impl block function is fips.so's ${bsym:-?} (aes $aes)" \
        test -n "$bsym"
    [ -n "$soff" ] && check "$N: impl stream function is fips.so's $(sym "$soff")" \
        test -n "$(sym "$soff")"
    case $aes in aesni) check "$N: an AES-NI block in fips.so is aesni_*" \
        grep -q '^aesni_' <<<"$bsym" ;; esac
else
    fail "$N: trace check: $(tail -n 3 "$d/fips.check" | tr '\n' ' ')"
fi
"$A" "$T" >"$d/fips.report" 2>&1
check "$N: report: provider verdict names fips and its module" \
    grep -q "\[provider\] AES-256-GCM of openssl's decryption: 100.0 % of the bytes .* decrypted by provider fips (OpenSSL FIPS Provider 3.0.*$fips_so" "$d/fips.report"
check "$N: report: the class comes from fips.so's code" \
    grep -q "native: .*(in provider fips: AES: " "$d/fips.report"
if grep -q "\[gcm-invisible\]" "$d/fips.report"; then
    fail "$N: report: gcm-invisible for records whose code was named from the FIPS module"
fi

# The negative: the default provider names no provider anywhere.
TLS_ENV=()
tls_client sclient "$TLS_PORT" big.bin "$d/def" "$d/def.%p.trace"
check "$N: default provider: same body" test "$(tls_sha "$d/def.body")" = "$want"
tls_traces "$d/def.*.trace"
D=${TRACES[0]:-}
check "$N: default provider: no prov event and no rec.prov" \
    bash -c "! grep -q '\"prov\"' '$D'"
"$A" "$D" >"$d/def.report" 2>&1
check "$N: default provider: no provider verdict" bash -c "! grep -q '\[provider\]' '$d/def.report'"
tls_server_stop
