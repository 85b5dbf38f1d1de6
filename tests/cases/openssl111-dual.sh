#!/usr/bin/env bash
# openssl111-dual: a real OpenSSL 1.1.1 copy beside the system OpenSSL 3 in one process. A
# program linked with libssl.so.3 (tests/fixtures/openssl111/dual.c) downloads over it, then
# calls a vendor library built against Debian 11's 1.1.1w and linked to its libssl.so.1.1
# (vendor111.c, built here from scripts/bullseye-root's packages), which downloads the same
# file. Both copies are traced and told apart: output unchanged, two libssl instances with
# abi 3 and 1.1.1, each connection opened by its own copy (suite named by that copy, not
# "(NONE)"), each connection's records decrypted by its own libcrypto (rec.lib), the bytes
# of each connection's application-data records equal to what that client read, and the
# report lists both instances with their versions. Skips only when the packages cannot be
# fetched.
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=tests/lib-bullseye.sh
. "$TLSM_TOP/tests/lib-bullseye.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload openssl111-dual
A=$O/tlsmeter-analyze
[ -x "$A" ] || { fail "openssl111-dual: $A not built; run make" && exit 0; }
cc=(cc)
case $(target_arch) in
aarch64) deb=arm64 triplet=aarch64-linux-gnu ;;
*) deb=amd64 triplet=x86_64-linux-gnu ;;
esac
if under_qemu; then
    target_wrapper "$A" "$d/analyze"
    A=$d/analyze
    cc=("${CROSS_COMPILE:-aarch64-linux-gnu-}gcc" --sysroot="$TLSM_SYSROOT")
fi
bz_root openssl111-dual "$deb" # skips, saying why, when the packages cannot be fetched
ROOT=$BZ_ROOT
LIB=$ROOT/usr/lib/$triplet
src=$TLSM_TOP/tests/fixtures/openssl111
# The 1.1.1 libraries by path, not -L ROOT/usr/lib: that folder also holds Debian 11's libc.so
# linker script, whose absolute paths would send the link to the host's (or no) libc.
if ! "${cc[@]}" -shared -fPIC -O2 -I"$ROOT/usr/include" -I"$ROOT/usr/include/$triplet" \
    -o "$d/libvendor111.so" "$src/vendor111.c" "$LIB/libssl.so.1.1" "$LIB/libcrypto.so.1.1" \
    -Wl,-rpath,"$LIB" 2>"$d/build.err" ||
    ! "${cc[@]}" -O2 -o "$d/dual" "$src/dual.c" -L"$d" -lvendor111 -Wl,-rpath,"$d" \
        -Wl,-rpath-link,"$LIB" -lssl -lcrypto 2>>"$d/build.err"; then
    fail "openssl111-dual: fixture did not build: $(head -c 300 "$d/build.err")"
    exit 0
fi
tls_make_file big.bin $((3 * 1024 * 1024 + 11))
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "openssl111-dual: openssl s_server did not start"
    exit 0
fi
tls_run "$d/plain" "" "$d/dual" "$TLS_PORT" big.bin
tls_run "$d/traced" "$d/t.%p.jsonl" "$d/dual" "$TLS_PORT" big.bin
if [ "$(cat "$d/plain.rc")" != 0 ]; then
    fail "openssl111-dual: the program failed without the preload: $(head -c 300 "$d/plain.err")"
    exit 0
fi
if why=$(tls_same_run x "$d/plain" "$d/traced"); then
    pass "openssl111-dual: output unchanged: $(tr '\n' ' ' <"$d/traced.out")"
else
    fail "openssl111-dual: $why"
fi
tls_traces "$d/t.*.jsonl"
if [ "${#TRACES[@]}" -ne 1 ]; then
    fail "openssl111-dual: ${#TRACES[@]} traces, want 1"
    exit 0
fi
tls_check "openssl111-dual trace: both copies traced, each connection on its own copy" \
    "$TLSM_PY" -c 'import json, re, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
out = open(sys.argv[2]).read()
got = {k: int(v) for k, v in re.findall(r"(ossl3|ossl111) got=(\d+)", out)}
libs = {e["id"]: e for e in ev if e["ev"] == "lib" and e.get("role") == "app"}
ssl = {e["abi"]: e for e in libs.values() if e["has_ssl"]}
crypto = {e["abi"]: e for e in libs.values() if e["has_crypto"]}
assert set(ssl) == {"3", "1.1.1"} and set(crypto) == {"3", "1.1.1"}, libs
assert crypto["1.1.1"]["version"].startswith("OpenSSL 1.1.1w"), crypto["1.1.1"]
opens = [e for e in ev if e["ev"] == "conn" and e["phase"] == "open"]
assert len(opens) == 2, opens
for abi, key in (("3", "ossl3"), ("1.1.1", "ossl111")):
    c = [o for o in opens if o["lib"] == ssl[abi]["id"]]
    assert len(c) == 1 and c[0]["suite"] == "TLS_AES_128_GCM_SHA256", (abi, opens)
    recs = [r for r in ev if r["ev"] == "rec" and r["conn"] == c[0]["conn"]]
    assert recs and all(r["lib"] == crypto[abi]["id"] for r in recs), (abi, {r["lib"] for r in recs})
    pt = sum(r["pt"] for r in recs if r["type"] == 23 and r["tag_ok"] and r.get("dir", "in") == "in")
    assert pt == got[key], (abi, pt, got[key])
' "${TRACES[0]}" "$d/traced.out"
"$A" "${TRACES[0]}" >"$d/report" 2>&1
if grep -q '^  lib .*libcrypto.so.3 (OpenSSL 3' "$d/report" &&
    grep -q '^  lib .*libcrypto.so.1.1 (OpenSSL 1.1.1w' "$d/report"; then
    pass "openssl111-dual: the report names both instances with their versions"
else
    fail "openssl111-dual: the report does not list both instances: $(grep '^  lib' "$d/report" | head -c 400)"
fi
