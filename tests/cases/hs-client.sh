#!/usr/bin/env bash
# hs-client: 40 new TLS 1.3 connections from one traced client (curl; our C client where curl
# cannot run) to openssl s_server, with an RSA-2048 certificate and then an ECDSA P-256 one
# (generated here, verified as the CA). Each connection's handshake is split into parts
# (conn.hs): certificate parsing, chain verification, key exchange and the signature check
# are there, add up to no more than the handshake, name the certificate (its DER size and
# key), and the per-certificate parse time is within 0.5-3x of d2i_X509 of the same DER timed
# in a loop (tests/progs/certbench, same run). The analyzer's `handshake` object agrees.
# tlsm-arch: x86_64 aarch64
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload hs-client
N=40
tls_make_file small.bin 2000
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1" \
    -keyout "$d/ec.key" -out "$d/ec.pem" >/dev/null 2>&1
RSA_CERT=$TLS_CERT RSA_KEY=$TLS_KEY

client=curl
tls_client_ok curl || client=mtclient

for kind in rsa ec; do
    name="hs-client $kind $client"
    if [ "$kind" = ec ]; then TLS_CERT=$d/ec.pem TLS_KEY=$d/ec.key; else
        TLS_CERT=$RSA_CERT TLS_KEY=$RSA_KEY; fi
    openssl x509 -in "$TLS_CERT" -outform der -out "$d/$kind.der"
    if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
        fail "$name: openssl s_server did not start"
        continue
    fi
    p=$d/$kind
    if [ "$client" = curl ]; then
        urls=()
        for _ in $(seq "$N"); do urls+=("https://127.0.0.1:$TLS_PORT/small.bin"); done
        # --no-sessionid: every connection a full handshake; Connection: close: a new one each.
        args=(curl -sS --no-sessionid -H "Connection: close" --cacert "$TLS_CERT" "${urls[@]}")
    else
        args=("$TLSM_PROGS/mtclient" -q -p "$TLS_PORT" -c "$TLS_CERT" -t 1 -n "$N" /small.bin)
    fi
    tls_run "$p.plain" "" "${args[@]}"
    tls_run "$p.traced" "$p.trace.%p.jsonl" "${args[@]}"
    tls_server_stop
    run_target "$TLSM_PROGS/certbench" -r 7 "$d/$kind.der" >"$p.bench" 2>&1
    traces=("$p".trace.*.jsonl)
    if [ ! -f "${traces[0]}" ]; then
        fail "$name: no trace ($(head -c 300 "$p.traced.err"))"
        continue
    fi
    run_target "$O/tlsmeter-analyze" --json "${traces[0]}" >"$p.json" 2>"$p.json.err"
    check "$name: the client never notices (exit code and output)" \
        "$TLSM_PY" - "$p" <<'PY'
import sys
p = sys.argv[1]
rc = [open(p + s + ".rc").read().strip() for s in (".plain", ".traced")]
assert rc == ["0", "0"], rc
out = [open(p + s + ".out", "rb").read() for s in (".plain", ".traced")]
assert out[0] == out[1], (len(out[0]), len(out[1]))
PY
    check "$name: $N handshakes split into parts that add up, certificate named, parse within 0.5-3x of d2i_X509 in a loop" \
        "$TLSM_PY" - "${traces[0]}" "$p.json" "$p.bench" "$(stat -c %s "$d/$kind.der")" "$kind" "$N" <<'PY'
import json, re, statistics, sys
trace, summ, bench, der, kind, n = sys.argv[1:7]
der, n = int(der), int(n)
key = {"rsa": "rsa2048", "ec": "ec256"}[kind]
ev = [json.loads(l) for l in open(trace)]
opens = [e for e in ev if e["ev"] == "conn" and e.get("phase") == "open"]
assert len(opens) == n, ("connections opened", len(opens))
per_cert = []
for c in opens:
    hs = c["hs"]
    parts = hs["parts"]
    for want in ("cert_parse", "chain_verify", "key_exchange", "verify"):
        assert want in parts and parts[want]["calls"] > 0, (c["conn"], want, parts)
    assert hs["resumed"] is False, c
    assert hs["certs"] == [{"bytes": der, "key": key}], (hs["certs"], der, key)
    assert parts["verify"].get("key") == key, parts["verify"]
    total = sum(p["ns"] for p in parts.values())
    # A part switched out (flagged in hs.preempt) is wall time: only unflagged ones must fit.
    if not hs.get("preempt"):
        assert total <= hs["ns"], ("parts exceed the handshake", c["conn"], total, hs["ns"])
    # On-CPU handshake time never exceeds the wall time spent inside the handshake calls.
    assert 0 < hs["ns"] <= c["hs_call_ns"] * 1.05 + 20000, (hs["ns"], c["hs_call_ns"])
    if not hs.get("preempt"):
        per_cert.append(parts["cert_parse"]["ns"] / parts["cert_parse"]["calls"])
assert len(per_cert) >= n // 2, ("connections not switched out", len(per_cert))
m = re.search(r"d2i_ns=(\d+)", open(bench).read())
assert m, open(bench).read()
loop = int(m.group(1))
traced = statistics.median(per_cert)
ratio = traced / loop
print("traced %.0f ns/cert, loop %d ns, ratio %.2f" % (traced, loop, ratio))
assert 0.5 <= ratio <= 3, ("cert_parse per certificate vs d2i_X509 loop", traced, loop, ratio)
j = json.load(open(summ))["handshake"]
assert j["connections"] == n and j["full"] == n and j["resumed"] == 0, j
for want in ("cert_parse", "chain_verify", "key_exchange", "verify", "other"):
    assert want in j["parts"], (want, j["parts"])
assert sum(p["ns"] for k, p in j["parts"].items()) <= j["parts_ns"] + 1, j
assert j["certs"] == [{"bytes": der, "key": key, "count": n}], j["certs"]
assert j["p50_ns"] <= j["p90_ns"] and j["ns"] > 0, j
vs = {v["id"] for v in json.load(open(summ))["verdicts"]}
assert "chain-every-connection" in vs and "no-resumption" in vs, vs
PY
done

# --compare: the RSA run against the ECDSA run, side by side with ratios per part.
ra=("$d"/rsa.trace.*.jsonl) ea=("$d"/ec.trace.*.jsonl)
if [ -f "${ra[0]}" ] && [ -f "${ea[0]}" ]; then
    run_target "$O/tlsmeter-analyze" --compare "${ra[0]}" "${ea[0]}" >"$d/compare.txt" 2>&1
    run_target "$O/tlsmeter-analyze" --json --compare "${ra[0]}" "${ea[0]}" >"$d/compare.json" 2>&1
    check "hs-client --compare: handshake rows and per-part ratios (RSA vs ECDSA)" \
        "$TLSM_PY" - "$d" "$N" <<'PY'
import json, re, sys
d, n = sys.argv[1], int(sys.argv[2])
t = open(d + "/compare.txt").read()
assert re.search(r"^handshakes\s+%d\s+%d$" % (n, n), t, re.M), t[-800:]
for part in ("cert_parse", "chain_verify", "verify", "key_exchange", "other"):
    assert re.search(r"^  %s/conn\s+\S+ \S+\s+\S+ \S+\s+[\d.]+x$" % part, t, re.M), (part, t[-800:])
j = json.load(open(d + "/compare.json"))
h = j["ratio_b_over_a"]["handshake"]
assert h["p50_ns"] > 0 and all(h["parts_per_conn"][p] > 0 for p in ("cert_parse", "verify")), h
assert j["a"]["handshake"]["certs"][0]["key"] == "rsa2048", j["a"]["handshake"]["certs"]
assert j["b"]["handshake"]["certs"][0]["key"] == "ec256", j["b"]["handshake"]["certs"]
PY
fi
