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
