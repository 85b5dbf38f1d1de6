#!/usr/bin/env bash
# reach-node: node, which carries OpenSSL 3.0 in its (position-dependent)
# executable: its SSL_read is exported but node's own calls never cross a PLT. tlsmeter
# reaches the copy through its provider tables (records) and its patched SSL_* entry points
# (reads, connections). An https.get of 16 MiB from openssl s_server: output unchanged,
# reads and records covering the body, node's lib reach "table+entry", the analyzer's class
# hardware; with OPENSSL_ia32cap masking AES-NI/PCLMULQDQ/SSSE3 the class is table, and with
# TLSMETER_CRYPTO=hw on top every record is rerouted, output unchanged. A tampered record
# (one flipped ciphertext byte) fails exactly as without tlsmeter.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=scripts/tlsmeter-mask.sh
. "$TLSM_TOP/scripts/tlsmeter-mask.sh"
"$TLSM_TOP/scripts/install-deps" --extra "nodejs" >/dev/null 2>&1
d=$(case_dir)
tls_init "$d"
tls_need_preload reach-node
if under_qemu; then
    skip "reach-node: no $(target_arch) node under qemu"
    exit 0
fi
if ! command -v node >/dev/null; then
    skip "reach-node: node is not installed (scripts/install-deps --extra nodejs)"
    exit 0
fi
if ! nm -D "$(command -v node)" 2>/dev/null | grep -q ' T SSL_read$'; then
    skip "reach-node: this node links a shared libssl (no SSL_read of its own): nothing to reach"
    exit 0
fi
ANALYZE=$O/tlsmeter-analyze
SIZE=$((16 * 1024 * 1024 + 5))
tls_make_file big.bin "$SIZE"
want="$SIZE $(tls_sha "$TLS_WWW/big.bin")"
MASK="OPENSSL_ia32cap=$TLSM_IA32_SOFT_MASK"
cat >"$d/get.js" <<'JS'
const https = require('https'), fs = require('fs'), crypto = require('crypto');
const h = crypto.createHash('sha256');
let n = 0;
https.get({host: '127.0.0.1', port: +process.argv[2], path: '/big.bin', servername: 'localhost',
           ca: fs.readFileSync(process.argv[3])}, res => {
  res.on('data', d => { h.update(d); n += d.length; });
  res.on('end', () => console.log(n, h.digest('hex')));
  res.on('error', e => { console.error('response:', e.code || e.message); process.exit(3); });
}).on('error', e => { console.error('request:', e.code || e.message); process.exit(4); });
JS
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "reach-node: openssl s_server did not start"
    exit 0
fi

# run NAME PORT ENV...: node get.js untraced and traced with ENV; same output and exit code.
run() {
    local p=$d/$1 port=$2
    shift 2
    TLS_RUNAS=(env "$@")
    tls_run "$p.plain" "" node "$d/get.js" "$port" "$TLS_CERT"
    TLS_RUNAS=()
    TLS_ENV=("$@")
    tls_run "$p.traced" "$p.%p.jsonl" node "$d/get.js" "$port" "$TLS_CERT"
    TLS_ENV=()
    if ! why=$(tls_same_run x "$p.plain" "$p.traced"); then
        fail "reach-node $1: $why"
        return 1
    fi
    tls_traces "$p.*.jsonl"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "reach-node $1: ${#TRACES[@]} traces, want 1"
        return 1
    fi
    return 0
}

# NAME|ENV|path|class
RUNS=(
    "native||native|hardware"
    "masked|$MASK|native|table"
    "masked-hw|$MASK TLSMETER_CRYPTO=hw|hw|"
)
for r in "${RUNS[@]}"; do
    IFS='|' read -r name env path class <<<"$r"
    if [ "$path" != native ] && ! tls_mode_ok "$path"; then
        skip "reach-node $name: $TLS_MODE_SKIP"
        continue
    fi
    # shellcheck disable=SC2086
    run "$name" "$TLS_PORT" $env || continue
    if [ "$(cat "$d/$name.traced.out")" != "$want" ]; then
        fail "reach-node $name: downloaded $(cat "$d/$name.traced.out"), want $want"
        continue
    fi
    "$ANALYZE" --json "${TRACES[0]}" >"$d/$name.json" 2>"$d/$name.json.err"
    TLS_PASS_NOTE="output unchanged" tls_check "reach-node $name: reads and records cover the body, path $path${class:+, class $class}" \
        "$TLSM_PY" - "${TRACES[0]}" "$d/$name.json" "$SIZE" "$path" "$class" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
rep = json.load(open(sys.argv[2]))
size, path, cls = int(sys.argv[3]), sys.argv[4], sys.argv[5]
libs = {e["id"]: e for e in ev if e["ev"] == "lib"}
node = [l for l in libs.values() if l["path"].endswith("/node") and l.get("role", "app") == "app"]
assert len(node) == 1, "node lib events: %r" % node
assert set(node[0].get("reach", "").split("+")) >= {"table", "entry"}, node[0].get("reach")
reads = [e for e in ev if e["ev"] == "read"]
got = sum(e["got"] for e in reads if e["got"] > 0)
assert got >= size, "reads returned %d bytes, body %d" % (got, size)
app = [e for e in ev if e["ev"] == "rec" and e.get("dir", "in") == "in" and e["type"] == 23 and e["tag_ok"]]
pt = sum(r["pt"] for r in app)
assert pt >= size, "records carry %d bytes, body %d" % (pt, size)
assert not [r for r in app if not r["read"]], "records outside node's reads"
assert {r["path"] for r in app} == {path}, {r["path"] for r in app}
conns = [e for e in ev if e["ev"] == "conn" and e["phase"] == "open"]
assert conns and conns[0]["lib"] == node[0]["id"], conns
if cls:
    c = [x for x in rep["ciphers"] if x["path"] == "native"]
    assert c and {x["impl"] for x in c} == {cls}, [(x["impl"], x.get("impl_detail")) for x in c]
print("ok %d reads, %d records, %d bytes" % (len(reads), len(app), pt))
PY
done

# Tamper through node's patched copy.
if ! tls_proxy_start 1.3; then
    fail "reach-node tamper: tamper proxy did not start: $(head -c 300 "$PROXY_LOG")"
    exit 0
fi
for mode in native hw; do
    if ! tls_mode_ok "$mode"; then
        skip "reach-node tamper $mode: $TLS_MODE_SKIP"
        continue
    fi
    env=()
    [ "$mode" = hw ] && env=("$MASK" TLSMETER_CRYPTO=hw)
    n0=$(tls_proxy_flips)
    run "tamper-$mode" "$PROXY_PORT" "${env[@]}" || continue
    if [ "$(cat "$d/tamper-$mode.plain.rc")" = 0 ]; then
        fail "reach-node tamper $mode: node accepted a tampered record without the preload (test is broken)"
    elif [ "$(tls_proxy_flips)" -lt $((n0 + 2)) ]; then
        fail "reach-node tamper $mode: the proxy flipped $(($(tls_proxy_flips) - n0)) records, want 2"
    else
        tls_check "reach-node tamper $mode: exit $(cat "$d/tamper-$mode.plain.rc") as without tlsmeter" \
            "$TLSM_PY" - "${TRACES[0]}" "$mode" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
bad = [e for e in ev if e["ev"] == "rec" and e["tag_ok"] is False]
assert len(bad) == 1 and bad[0]["path"] == sys.argv[2], bad
PY
    fi
done
