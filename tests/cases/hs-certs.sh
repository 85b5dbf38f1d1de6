#!/usr/bin/env bash
# hs-certs: peer certificates are saved as DER only when asked. By default a trace names each
# certificate's size and key and no file is written; with TLSMETER_CERTS=DIR each distinct
# certificate is saved once (0600, the server's exact DER), an existing name (a planted
# symlink) is never written through; scripts/tlsmeter-certs then times d2i_X509 of the saved
# DER beside the trace's own figure and prints RSA-2048 vs ECDSA P-256 signature costs.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload hs-certs
tls_make_file small.bin 500
openssl x509 -in "$TLS_CERT" -outform der -out "$d/server.der"
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "hs-certs: openssl s_server did not start"
    exit 0
fi
mkdir -p "$d/home" "$d/certs" "$d/planted"
get() { # get PREFIX [VAR=VAL...]: 3 connections from our C client, run in $d/home
    local p=$1
    shift
    TLS_ENV=("$@")
    (cd "$d/home" && tls_run "$p" "$p.trace.%p.jsonl" "$TLSM_PROGS/mtclient" -q -p "$TLS_PORT" \
        -c "$TLS_CERT" -t 1 -n 3 /small.bin)
    TLS_ENV=()
}
get "$d/default"
get "$d/asked" TLSMETER_CERTS="$d/certs"
# A name already taken by a symlink: the preload must neither follow nor replace it.
id=$(find "$d/certs" -name 'cert-*.der' -printf '%f\n' | head -n 1)
[ -n "$id" ] && ln -s "$d/victim" "$d/planted/$id"
get "$d/planted" TLSMETER_CERTS="$d/planted"
tls_server_stop
check "hs-certs: no DER by default, saved once (0600, exact bytes) when asked, never through a symlink" \
    "$TLSM_PY" - "$d" <<'PY'
import glob, json, os, stat, sys
d = sys.argv[1]
for p in ("default", "asked", "planted"):
    assert open("%s/%s.rc" % (d, p)).read().strip() == "0", p
def certs(p):
    t = glob.glob("%s/%s.trace.*.jsonl" % (d, p))[0]
    return [x for l in open(t) if '"phase":"open"' in l for x in json.loads(l)["hs"]["certs"]]
der = open(d + "/server.der", "rb").read()
c = certs("default")
assert len(c) == 3 and all(x == {"bytes": len(der), "key": "rsa2048"} for x in c), c
assert os.listdir(d + "/home") == [] or all(not f.endswith(".der") for f in os.listdir(d + "/home"))
c = certs("asked")
files = os.listdir(d + "/certs")
assert len(files) == 1 and all(x.get("der") == files[0] for x in c), (files, c)
f = os.path.join(d, "certs", files[0])
assert open(f, "rb").read() == der
assert stat.S_IMODE(os.stat(f).st_mode) == 0o600, oct(os.stat(f).st_mode)
assert not os.path.exists(d + "/victim"), "wrote through the planted symlink"
assert os.path.islink(os.path.join(d, "planted", files[0]))
PY
"$TLSM_TOP/scripts/tlsmeter-certs" --json --certs "$d/certs" "$d"/asked.trace.*.jsonl \
    >"$d/certs.json" 2>"$d/certs.err"
echo "$?" >"$d/certs.rc"
check "hs-certs: tlsmeter-certs times the saved DER beside the trace, and both signature kinds" \
    "$TLSM_PY" - "$d" <<'PY'
import json, sys
d = sys.argv[1]
assert open(d + "/certs.rc").read().strip() == "0", open(d + "/certs.err").read()[-300:]
j = json.load(open(d + "/certs.json"))
(r,) = j["certs"]
assert r["key"] == "rsa2048" and r["connections"] >= 1, r
assert r["loop_d2i_ns"] > 0 and r["trace_parse_ns"] > 0 and r["loop_verify_ns"] > 0, r
assert set(j["signatures"]) == {"rsa2048", "ec256"}, j["signatures"]
PY

# Installed (make install PREFIX=DIR), tlsmeter-certs looked for build/tests/certbench beside
# DIR and failed: its helper is installed under DIR/lib/tlsmeter and found there. O and
# CERTBENCH are unset: tests/run's O would point the script at the build tree instead.
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$TLSM_TOP" --no-print-directory O="$O" \
    SAN="${TLSM_SAN:-}" install PREFIX="$d/opt" >"$d/install.log" 2>&1; then
    env -u O -u CERTBENCH "$d/opt/bin/tlsmeter-certs" --json --certs "$d/certs" \
        "$d"/asked.trace.*.jsonl >"$d/inst.json" 2>"$d/inst.err"
    echo "$?" >"$d/inst.rc"
    check "hs-certs: the installed tlsmeter-certs finds its helper (PREFIX/lib/tlsmeter)" \
        "$TLSM_PY" - "$d" <<'PY'
import json, sys
d = sys.argv[1]
assert open(d + "/inst.rc").read().strip() == "0", open(d + "/inst.err").read()[-300:]
(r,) = json.load(open(d + "/inst.json"))["certs"]
assert r["loop_d2i_ns"] > 0 and r["loop_verify_ns"] > 0, r
PY
else
    fail "hs-certs: make install PREFIX=$d/opt: $(tail -n 2 "$d/install.log" | tr '\n' ' ')"
fi
# Nothing to compare (no --certs; traces recorded without TLSMETER_CERTS) printed a table of
# '-' with exit 0: say so, exit 2, print no table.
certs_nothing() { # NAME WANT ARGS...
    local name=$1 want=$2 rc
    shift 2
    "$TLSM_TOP/scripts/tlsmeter-certs" "$@" >"$d/none.out" 2>"$d/none.err"
    rc=$?
    if [ "$rc" = 2 ] && [ ! -s "$d/none.out" ] &&
        grep -q "^tlsmeter-certs: no certificates to compare: $want" "$d/none.err"; then
        pass "hs-certs: tlsmeter-certs $name: no certificates to compare, exit 2"
    else
        fail "hs-certs: tlsmeter-certs $name: exit $rc: $(head -c 200 "$d/none.err") $(head -c 200 "$d/none.out")"
    fi
}
certs_nothing "without --certs" "give --certs DIR" "$d"/asked.trace.*.jsonl
certs_nothing "on traces without saved DER" "the traces name no saved certificate" \
    --certs "$d/certs" "$d"/default.trace.*.jsonl
rm -rf "$d"
