#!/usr/bin/env bash
# fleet-duckdb: docs/fleet.md's DuckDB query over a full trace's JSON Lines gives the --json
# report's figures. A real curl download traced in event mode, printed with --jsonl; the
# query (the block marked <!-- duckdb: records-by-cipher -->) run by DuckDB's Node.js package
# (@duckdb/node-api from the npm registry, cached in ${TLSM_CACHE:-~/.cache/tlsmeter}, ~70 MB
# once); per direction its records, plaintext and crypto_ns equal --json's records, the
# copies' plaintext and crypto_ns_written.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
N=fleet-duckdb
DUCKDB_NODE_VERSION=1.5.6-r.1
d=$(case_dir)
tls_init "$d"
tls_need_preload "$N"
A=$O/tlsmeter-analyze
if under_qemu || in_userland; then
    skip "$N: the host's DuckDB, not under qemu or another userland"
    exit 0
fi
if ! tls_curl_ok; then
    skip "$N: $TLS_CURL_SKIP"
    exit 0
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    skip "$N: no node and npm here (DuckDB's Node.js package runs the query)"
    exit 0
fi
duck=${TLSM_CACHE:-$HOME/.cache/tlsmeter}/duckdb-node-$DUCKDB_NODE_VERSION
if [ ! -d "$duck/node_modules/@duckdb/node-api" ]; then
    mkdir -p "$duck" &&
        (cd "$duck" && timeout 300 npm install --no-audit --no-fund \
            "@duckdb/node-api@$DUCKDB_NODE_VERSION") >"$d/npm.log" 2>&1
fi
if [ ! -d "$duck/node_modules/@duckdb/node-api" ]; then
    skip "$N: npm could not install @duckdb/node-api@$DUCKDB_NODE_VERSION: $(tail -n 2 "$d/npm.log" | tr '\n' ' ')"
    exit 0
fi
cat >"$duck/query.mjs" <<'JS'
// query.mjs SQLFILE: the query's rows as JSON (DuckDB in memory, files relative to cwd).
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
const db = await DuckDBInstance.create(':memory:');
const rows = await (await db.connect()).runAndReadAll(readFileSync(process.argv[2], 'utf8'));
console.log(JSON.stringify(rows.getRowObjectsJson()));
JS
# shellcheck disable=SC2016 # (the Python program is in single quotes on purpose)
"$TLSM_PY" -c 'import re, sys
m = re.search(r"<!-- duckdb: records-by-cipher -->\n```sql\n(.*?)\n```", open(sys.argv[1]).read(), re.S)
sys.exit(0 if m and open(sys.argv[2], "w").write(m.group(1)) else 1)' "$TLSM_TOP/docs/fleet.md" "$d/q.sql" ||
    fail "$N: docs/fleet.md has no block marked duckdb: records-by-cipher"

tls_make_file big.bin $((8 << 20))
tls_server_start 1.3 TLS_AES_128_GCM_SHA256 || {
    fail "$N: no s_server"
    exit 0
}
TLS_KEEP_FORMAT=1
tls_client curl "$TLS_PORT" big.bin "$d/dl" "$d/dl.%p.trace"
tls_traces "$d/dl.*.trace"
if [ "$(cat "$d/dl.rc")" != 0 ] || [ "${#TRACES[@]}" -ne 1 ]; then
    fail "$N: curl exit $(cat "$d/dl.rc"), ${#TRACES[@]} traces"
    exit 0
fi
"$A" --jsonl "${TRACES[0]}" >"$d/t.jsonl" 2>"$d/jsonl.err"
"$A" --json "${TRACES[0]}" >"$d/t.json" 2>"$d/json.err"
(cd "$d" && NODE_PATH=$duck/node_modules timeout 60 node "$duck/query.mjs" q.sql) \
    >"$d/duck.json" 2>"$d/duck.err"
check "$N: DuckDB ran docs/fleet.md's query ($(head -c 200 "$d/duck.err"))" test -s "$d/duck.json"
check "$N: its records, plaintext and crypto_ns per direction = --json's" "$TLSM_PY" -c 'import json, sys
rows = json.load(open(sys.argv[1]))
rep = json.load(open(sys.argv[2]))
got = {}
for r in rows:
    g = got.setdefault(r["dir"], [0, 0, 0])
    for i, k in enumerate(("records", "plaintext", "crypto_ns")):
        g[i] += int(r[k])
want = {"in": [rep["records"], sum(c["plaintext_bytes"] for c in rep["copies"]), rep["crypto_ns_written"]]}
enc = rep.get("encrypt") or {}
if enc.get("records"):
    want["out"] = [enc["records"], None, enc["crypto_ns_written"]]
assert set(got) == set(want), (got, want)
for d, w in want.items():
    for i in range(3):
        assert w[i] is None or got[d][i] == w[i], (d, i, got[d], w)
assert want["in"][0] > 500, want
print("ok", got)' "$d/duck.json" "$d/t.json"
