#!/usr/bin/env bash
# safe-node-server: node as an HTTPS server sends through the OpenSSL 3.0 in its own executable,
# whose sealing contexts tlsmeter reaches only through the provider tables (encrypt_init,
# update, final). A node server sends 12 MiB to curl, traced and untraced: output, exit code
# and body unchanged; the outgoing records cover every byte SSL_write returned (one record or
# more per 16 KiB, plaintext equal to the bytes written and to the connection's wbytes), each
# inside a write of node's copy with crypto time, the implementation named (hardware, and table
# with OPENSSL_ia32cap masking AES-NI/PCLMULQDQ/SSSE3: the independent check that the name
# follows the code that ran). TLS 1.3 AES-256-GCM, TLS 1.2 AES-128-GCM, ChaCha20-Poly1305.
# TLSMETER_CRYPTO=hw: the sealing records stay native and a warning says so. A CBC suite,
# whose records no table reaches: the report's sending side says blind (no-records) and gives
# no verdict on its crypto.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=scripts/tlsmeter-mask.sh
. "$TLSM_TOP/scripts/tlsmeter-mask.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload safe-node-server
if under_qemu; then
    skip "safe-node-server: no $(target_arch) node under qemu"
    exit 0
fi
command -v node >/dev/null || "$TLSM_TOP/scripts/install-deps" --extra "nodejs" >/dev/null 2>&1
if ! command -v node >/dev/null; then
    skip "safe-node-server: node is not installed (scripts/install-deps --extra nodejs)"
    exit 0
fi
if ! nm -D "$(command -v node)" 2>/dev/null | grep -q ' T SSL_write$'; then
    skip "safe-node-server: this node links a shared libssl (no SSL_write of its own): nothing to reach"
    exit 0
fi
if ! tls_curl_ok; then
    skip "safe-node-server: $TLS_CURL_SKIP"
    exit 0
fi
ANALYZE=$O/tlsmeter-analyze
SIZE=$((12 * 1024 * 1024 + 7))
MASK="OPENSSL_ia32cap=$TLSM_IA32_SOFT_MASK"

# srv.js PORTFILE SIZE [MAXVERSION [CIPHERS]]: one HTTPS response of SIZE bytes (a fixed
# pattern, 1 MiB per res.write), then exit once the response and the connection are gone.
# Binds 127.0.0.1:0 and writes the port to PORTFILE; prints what it served.
cat >"$d/srv.js" <<'JS'
const https = require('https'), fs = require('fs');
const [portFile, size, maxVersion, ciphers] = process.argv.slice(2);
const opts = {key: fs.readFileSync(process.env.KEY), cert: fs.readFileSync(process.env.CERT)};
if (maxVersion) opts.maxVersion = maxVersion;
if (ciphers) opts.ciphers = ciphers;
const chunk = Buffer.alloc(1 << 20);
for (let i = 0; i < chunk.length; i++) chunk[i] = (i * 2654435761 >>> 13) & 255;
let sent = 0;
const srv = https.createServer(opts, (req, res) => {
  res.writeHead(200, {'content-length': +size});
  let left = +size;
  const more = () => {
    while (left > 0) {
      const n = Math.min(left, chunk.length);
      left -= n;
      sent += n;
      if (!res.write(chunk.subarray(0, n))) return res.once('drain', more);
    }
    res.end();
  };
  more();
  res.on('close', () => srv.close()); // not 'finish': curl may close before the last write's callback
});
srv.on('close', () => console.log('served', sent));
srv.listen(0, '127.0.0.1', () => fs.writeFileSync(portFile, String(srv.address().port)));
JS

# serve NAME TRACE NODEARGS -- CURLARGS: srv.js (traced when TRACE is set, with TLS_ENV) and
# one curl download from it; NAME.{out,err,rc} the server's, NAME.body/.crc curl's.
serve() {
    local p=$d/$1 trace=$2 nargs=() pid port=
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        nargs+=("$1")
        shift
    done
    shift
    rm -f "$p.port" "$p.body"
    KEY=$TLS_KEY CERT=$TLS_CERT tls_run "$p" "$trace" node "$d/srv.js" "$p.port" "$SIZE" \
        "${nargs[@]}" &
    pid=$!
    TLS_PIDS+=("$pid")
    for _ in $(seq 200); do
        [ -s "$p.port" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    port=$(cat "$p.port" 2>/dev/null)
    if [ -n "$port" ]; then
        timeout -k 2 30 env -u LD_PRELOAD curl -sS --cacert "$TLS_CERT" "$@" -o "$p.body" \
            "https://127.0.0.1:$port/" 2>"$p.cerr"
        echo $? >"$p.crc"
    else
        echo 99 >"$p.crc"
    fi
    for _ in $(seq 200); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    tls_stop_pid "$pid"
    [ -f "$p.body" ] || : >"$p.body"
}

# NAME|NODEARGS|CURLARGS|ENV|cipher|class ("-": the class is not checked: ChaCha20 has no GCM
# context to name)
RUNS=(
    "tls13||||AES-256-GCM|hardware"
    "tls12|TLSv1.2 ECDHE-RSA-AES128-GCM-SHA256||$MASK|AES-128-GCM|table"
    "chacha||--tls13-ciphers TLS_CHACHA20_POLY1305_SHA256||ChaCha20-Poly1305|-"
    "masked13|||$MASK|AES-256-GCM|table"
    "hw|||$MASK TLSMETER_CRYPTO=hw|AES-256-GCM|table"
)
want=
for r in "${RUNS[@]}"; do
    IFS='|' read -r name nargs cargs env cipher class <<<"$r"
    if [[ $env == *TLSMETER_CRYPTO=hw* ]] && ! tls_mode_ok hw; then
        skip "safe-node-server $name: $TLS_MODE_SKIP"
        continue
    fi
    # shellcheck disable=SC2086
    serve "$name.plain" "" $nargs -- $cargs
    if [ "$(cat "$d/$name.plain.crc")" != 0 ] || [ "$(tls_size "$d/$name.plain.body")" != "$SIZE" ]; then
        fail "safe-node-server $name: the untraced download failed (curl exit $(cat "$d/$name.plain.crc"): $(head -c 200 "$d/$name.plain.cerr")) (test is broken)"
        continue
    fi
    want=$(tls_sha "$d/$name.plain.body")
    TLS_ENV=()
    read -r -a TLS_ENV <<<"$env"
    # shellcheck disable=SC2086
    serve "$name.traced" "$d/$name.%p.jsonl" $nargs -- $cargs
    TLS_ENV=()
    if ! why=$(tls_same_run x "$d/$name.plain" "$d/$name.traced"); then
        fail "safe-node-server $name: $why"
        continue
    fi
    if [ "$(cat "$d/$name.traced.crc")" != 0 ] || [ "$(tls_sha "$d/$name.traced.body")" != "$want" ]; then
        fail "safe-node-server $name: traced server's body differs (curl exit $(cat "$d/$name.traced.crc"), $(tls_size "$d/$name.traced.body") bytes)"
        continue
    fi
    tls_traces "$d/$name.*.jsonl"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "safe-node-server $name: ${#TRACES[@]} traces, want 1"
        continue
    fi
    "$ANALYZE" --json "${TRACES[0]}" >"$d/$name.json" 2>"$d/$name.json.err"
    path=native
    TLS_PASS_NOTE="output unchanged" tls_check \
        "safe-node-server $name: outgoing $cipher records cover every byte written, in node's writes, class $class" \
        "$TLSM_PY" - "${TRACES[0]}" "$d/$name.json" "$SIZE" "$cipher" "$class" "$env" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
rep = json.load(open(sys.argv[2]))
size, cipher, cls, env = int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
libs = {e["id"]: e for e in ev if e["ev"] == "lib"}
node = [l for l in libs.values() if l["path"].endswith("/node") and l.get("role", "app") == "app"]
assert len(node) == 1, "node lib events: %r" % node
assert "table" in node[0].get("reach", "").split("+"), node[0].get("reach")
writes = [e for e in ev if e["ev"] == "write"]
written = sum(e["written"] for e in writes if e.get("written", 0) > 0)
assert written >= size, "writes returned %d bytes, body %d" % (written, size)
out = [e for e in ev if e["ev"] == "rec" and e.get("dir") == "out"]
app = [r for r in out if r["type"] == 23]
assert len(app) >= (size + 16383) // 16384, "%d outgoing records for %d bytes written" % (len(app), written)
pt = sum(r["pt"] for r in app)
assert pt == written, "outgoing records carry %d bytes, SSL_write returned %d" % (pt, written)
assert {r["cipher"] for r in app} == {cipher}, {r["cipher"] for r in app}
assert {r["lib"] for r in app} == {node[0]["id"]}, {r["lib"] for r in app}
assert {r["path"] for r in app} == {"native"}, {r["path"] for r in app}
assert not [r for r in app if not r.get("write")], "records outside node's writes"
assert all(r["tag_ok"] for r in out), "a sealed record flagged failed"
assert sum(r["crypto_ns"] for r in app) > 0, "crypto time 0"
closes = [e for e in ev if e["ev"] == "conn" and e["phase"] == "close"]
assert closes and sum(c.get("wbytes", 0) for c in closes) == written, closes
assert sum(c.get("wrecs", 0) for c in closes) == len(out), closes
enc = rep["encrypt"]
rows = [c for c in enc["ciphers"] if c["cipher"] == cipher]
assert rows, enc["ciphers"]
if cls != "-":
    assert {r.get("impl") for r in app} != {None}, "no impl on the records"
    assert {c["impl"] for c in rows} == {cls}, [(c["impl"], c.get("impl_detail")) for c in rows]
    assert enc["impl"] == cls, enc["impl"]
assert not [v for v in enc["verdicts"] if v["kind"] == "blind"], enc["verdicts"]
if "TLSMETER_CRYPTO=hw" in env:
    warns = [e for e in ev if e["ev"] == "warn" and "seals its records through its provider tables" in e.get("msg", "")]
    assert len(warns) == 1, [e for e in ev if e["ev"] == "warn"]
    ins = [e for e in ev if e["ev"] == "rec" and e.get("dir", "in") == "in" and e["type"] == 23]
    assert ins and {r["path"] for r in ins} == {"hw"}, {r["path"] for r in ins}
print("ok %d records, %d bytes" % (len(app), pt))
PY
done

# A CBC suite: no provider table tlsmeter rewrites seals it. Output unchanged; the report's
# sending side names the bytes as unseen (blind, no-records) and gives no verdict on them.
name=cbc
serve "$name.plain" "" TLSv1.2 ECDHE-RSA-AES128-SHA256 -- --tls-max 1.2
serve "$name.traced" "$d/$name.%p.jsonl" TLSv1.2 ECDHE-RSA-AES128-SHA256 -- --tls-max 1.2
tls_traces "$d/$name.*.jsonl"
if [ "$(cat "$d/$name.plain.crc")" != 0 ] || [ "$(tls_size "$d/$name.plain.body")" != "$SIZE" ]; then
    fail "safe-node-server $name: the untraced download failed (curl exit $(cat "$d/$name.plain.crc"): $(head -c 200 "$d/$name.plain.cerr")) (test is broken)"
elif ! why=$(tls_same_run x "$d/$name.plain" "$d/$name.traced"); then
    fail "safe-node-server $name: $why"
elif [ "$(tls_sha "$d/$name.traced.body")" != "$(tls_sha "$d/$name.plain.body")" ]; then
    fail "safe-node-server $name: traced server's body differs"
elif [ "${#TRACES[@]}" -ne 1 ]; then
    fail "safe-node-server $name: ${#TRACES[@]} traces, want 1"
else
    "$ANALYZE" "${TRACES[0]}" >"$d/$name.txt" 2>&1
    "$ANALYZE" --json "${TRACES[0]}" >"$d/$name.json" 2>"$d/$name.json.err"
    tls_check "safe-node-server $name: the sending side says blind, no verdict on its crypto" \
        "$TLSM_PY" - "$d/$name.json" "$d/$name.txt" "$SIZE" <<'PY'
import json, sys
enc = json.load(open(sys.argv[1]))["encrypt"]
txt = open(sys.argv[2]).read()
size = int(sys.argv[3])
assert enc["bytes_written"] >= size, enc["bytes_written"]
assert enc["records_app"] == 0, "CBC records seen: %d (the test needs an unreached cipher)" % enc["records_app"]
kinds = [(v["id"], v["kind"]) for v in enc["verdicts"]]
assert ("no-records", "blind") in kinds, kinds
assert all(k == "blind" for _, k in kinds), kinds
sec = txt[txt.index("\nencryption"):]
assert "nothing to act on" not in sec, "the sending side reads as fine"
assert "[no-records] writes sent" in sec, sec[:600]
print("ok")
PY
fi
