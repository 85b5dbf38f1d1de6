#!/usr/bin/env bash
# analyze-reach: the analyzer's "copies and reach" section: each OpenSSL copy,
# how tlsmeter reached it (lib reach), its records and the bytes that arrived through its
# socket reads past the hooks (sockread events), checked against instruments independent of
# tlsmeter. The real programs of vendor-reach and reach-node:
# - the stripped --exclude-libs,ALL vendor library (tests/vendor, reach "table+plt": its
#   SSL_read unreachable) downloading 2 MiB through tests/tools/tamper_proxy.py relaying
#   without flipping (--nth 0), TLS 1.3 and 1.2, natively and with TLSMETER_CRYPTO=hw: the
#   --json copy's socket bytes equal the bytes the relay passed to the client, its records
#   (rerouted ones included) the relay's encrypted records and their bytes on the wire, the
#   rest exactly the relay's records in clear; its plaintext (with hw, that of its records the
#   backend decrypted, said so in the text) is the body vclient counted plus less than 4 KiB
#   (HTTP head, handshake messages, tickets); a socket-reads verdict naming the copy, no
#   bytes-unseen; the text report's section names the copy and "table+plt".
# - a curl download rerouted to the hw backend (tests/golden/real-ab-hw.jsonl): its one copy
#   with crypto code has the rerouted records and their plaintext.
# - the same in summary mode (TLSMETER_EVENTS=summary): no sockread line per read, the copy's
#   socket reads summed per snapshot, the same equalities.
# - the same trace with every second application-data record removed (records tlsmeter did
#   not see): bytes-unseen, its unseen_bytes exactly the removed records' wire bytes plus the
#   clear ones.
# - node (reach "table+entry", its copy in the executable): the copy named with its reach,
#   no socket reads, its records' application plaintext covering the bytes node counted.
# - the RTLD_DEEPBIND plugin (vendor-reach's "got" layout): the callers whose GOT slots were
#   rewritten are listed under their copy, with the functions.
# - openssl s_server -WWW traced (an SSL BIO: libssl calls SSL_write itself, past the PLT):
#   the encrypt side's writes-bypassed verdict, its records carrying the bytes curl got.
# Without the analyzer's copies (before this case) every check fails.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload analyze-reach
A=$O/tlsmeter-analyze
V=$O/vendor
if under_qemu; then
    skip "analyze-reach: the report is the host's (vendor-reach covers the copies under qemu)"
    exit 0
fi
if ! out=$("$TLSM_TOP/tests/vendor/build" "$V" 2>&1); then
    if echo "$out" | grep -q 'libssl-dev\|static archives'; then
        skip "analyze-reach: $out"
    else
        fail "analyze-reach: fixtures did not build: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
    fi
    exit 0
fi
BODY=$((2 * 1024 * 1024 + 99))
tls_make_file big.bin "$BODY"
want_sha=$(tls_sha "$TLS_WWW/big.bin")
TLS_PROXY_ARGS=(--nth 0)

# relayed NAME: the proxy's s2c counts of its last connection, as "bytes records enc_records
# enc_bytes".
relayed() {
    sed -n 's/.* s2c bytes=\([0-9]*\) records=\([0-9]*\) enc_records=\([0-9]*\) enc_bytes=\([0-9]*\)$/\1 \2 \3 \4/p' \
        "$PROXY_LOG" | tail -n 1
}

# vendor NAME ENV...: vclient through the relay, traced with ENV; sets TRACE.
vendor() {
    local p=$d/$1
    shift
    TLS_ENV=("$@")
    tls_run "$p" "$p.%p.jsonl" "$V/stripall/vclient" -p "$PROXY_PORT" -c "$TLS_CERT" -f big.bin
    TLS_ENV=()
    tls_traces "$p.*.jsonl"
    TRACE=${TRACES[0]:-}
    if [ "$(cat "$p.rc")" != 0 ] || ! grep -q "bytes=$BODY sha256=$want_sha" "$p.out"; then
        fail "analyze-reach $1: vclient exit $(cat "$p.rc"): $(head -c 200 "$p.out") $(head -c 200 "$p.err")"
        return 1
    elif [ "${#TRACES[@]}" -ne 1 ]; then
        fail "analyze-reach $1: ${#TRACES[@]} traces, want 1"
        return 1
    fi
    for _ in $(seq 50); do # the relay logs a connection's counts once both sides closed
        [ -n "$(relayed)" ] && [ "$(grep -c ' s2c ' "$PROXY_LOG")" -gt "${NCONN:-0}" ] && break
        sleep 0.1
    done
    NCONN=$(grep -c ' s2c ' "$PROXY_LOG")
}

# copy_check NAME TRACE RELAYED: the --json copy against the relay's counts and vclient's.
copy_check() {
    "$A" --json "$2" >"$2.json" 2>"$2.json.err"
    "$A" "$2" >"$2.txt" 2>/dev/null
    tls_check "analyze-reach $1: socket bytes, records and wire bytes = the relay's ($3), plaintext = vclient's body + < 4 KiB" \
        "$TLSM_PY" - "$2.json" "$2.txt" "$BODY" "$3" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
txt = open(sys.argv[2]).read()
body = int(sys.argv[3])
r_bytes, r_recs, r_enc, r_enc_bytes = (int(x) for x in sys.argv[4].split())
c = [x for x in rep["copies"] if x["path"].endswith("stripall/libvendor.so")]
assert len(c) == 1, "copies %r" % [(x["path"], x["reach"]) for x in rep["copies"]]
c = c[0]
assert c["reach"] == "table+plt", c["reach"]
s = c["socket_reads"]
assert s and s["bytes"] == r_bytes, "socket bytes %s, the relay passed %d" % (s and s["bytes"], r_bytes)
assert len(s["sockets"]) == 1 and s["sockets"][0]["bytes"] == r_bytes, s["sockets"]
recs = c["records"] + c["records_rerouted"]
wire = c["record_wire_bytes"] + c["records_rerouted_wire_bytes"]
assert recs == r_enc, "records %d, the relay passed %d encrypted ones" % (recs, r_enc)
assert wire == r_enc_bytes, "record wire bytes %d, the relay's encrypted records %d" % (wire, r_enc_bytes)
assert c["unseen_bytes"] == r_bytes - r_enc_bytes, (c["unseen_bytes"], r_bytes - r_enc_bytes)
# Under TLSMETER_CRYPTO=hw the copy's records are rerouted (their lib is the backend's): they
# are still this copy's, with their plaintext. The copy was credited "0 B plaintext" before.
pt = c["plaintext_bytes"] + c["plaintext_bytes_rerouted"]
assert body <= pt < body + 4096, "plaintext %d (%d rerouted), vclient's body %d" % (
    pt, c["plaintext_bytes_rerouted"], body)
line = txt.split("stripall/libvendor.so", 1)[1].split("\n    records  ", 1)[1].split("\n")[0]
if c["records_rerouted"]:
    assert c["records"] == 0 and c["records_rerouted_app"] > 0, c
    assert line.endswith(", all rerouted to tlsmeter's backend") and " 0 B plaintext" not in line, line
ids = [v["id"] for v in rep["verdicts"]]
sr = [v for v in rep["verdicts"] if v["id"] == "socket-reads"]
assert sr and "stripall/libvendor.so" in sr[0]["text"], ids
# evidence is a JSON real, printed with 6 significant digits
assert abs(sr[0]["evidence"]["socket_bytes"] - r_bytes) <= r_bytes * 1e-5, sr[0]["evidence"]
assert "bytes-unseen" not in ids, ids
assert "copies and reach" in txt and "table+plt" in txt and "stripall/libvendor.so" in txt, \
    "text report without the copy's section"
print("ok %d socket bytes, %d records (%d rerouted), %d on the wire, %d in clear, plaintext %d"
      % (s["bytes"], recs, c["records_rerouted"], wire, c["unseen_bytes"], c["plaintext_bytes"]))
PY
}

for proto in 1.3 1.2; do
    case $proto in
    1.3) suite=TLS_AES_128_GCM_SHA256 ;;
    1.2) suite=ECDHE-RSA-AES128-GCM-SHA256 ;;
    esac
    if ! tls_server_start "$proto" "$suite"; then
        fail "analyze-reach $proto: openssl s_server did not start"
        continue
    fi
    if ! tls_proxy_start "$proto"; then
        fail "analyze-reach $proto: the relay did not start: $(head -c 300 "$PROXY_LOG")"
        tls_server_stop
        continue
    fi
    NCONN=0
    if vendor "native$proto"; then
        copy_check "vendor TLS $proto" "$TRACE" "$(relayed)"
        if [ "$proto" = 1.3 ]; then
            # Records tlsmeter did not see: every second application-data record removed.
            tlsm_jsonl "$TRACE"
            "$TLSM_PY" - "$TRACE" "$d/cut.jsonl" >"$d/cut.removed" <<'PY'
import json, sys
n = gone = 0
with open(sys.argv[2], "w") as out:
    for line in open(sys.argv[1]):
        e = json.loads(line)
        if e["ev"] == "rec" and e.get("dir", "in") == "in" and e["type"] == 23:
            n += 1
            if n % 2 == 0:
                gone += e["len"] + 5
                continue
        out.write(line)
print(gone)
PY
            read -r r_bytes _ _ r_enc_bytes < <(relayed)
            "$A" --json "$d/cut.jsonl" >"$d/cut.json" 2>/dev/null
            tls_check "analyze-reach: records removed from the trace: bytes-unseen, unseen bytes = the removed records' + the clear ones" \
                "$TLSM_PY" - "$d/cut.json" "$(cat "$d/cut.removed")" "$((r_bytes - r_enc_bytes))" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
gone, clear = int(sys.argv[2]), int(sys.argv[3])
c = [x for x in rep["copies"] if x["path"].endswith("stripall/libvendor.so")][0]
assert c["unseen_bytes"] == gone + clear, (c["unseen_bytes"], gone, clear)
v = [v for v in rep["verdicts"] if v["id"] == "bytes-unseen"]
assert v, [x["id"] for x in rep["verdicts"]]
assert abs(v[0]["evidence"]["unseen_bytes"] - gone - clear) <= (gone + clear) * 1e-5, v[0]["evidence"]
print("ok unseen %d = %d removed + %d clear" % (c["unseen_bytes"], gone, clear))
PY
            "$A" --openmetrics "$d/cut.jsonl" >"$d/cut.prom" 2>/dev/null
            tls_check "analyze-reach: records removed from the trace: --openmetrics's unmeasured bytes of the copy = --json's (> 0)" \
                "$TLSM_PY" - "$d/cut.prom" "$d/cut.json" <<'PY'
import json, re, sys
prom = open(sys.argv[1]).read()
rep = json.load(open(sys.argv[2]))
want = rep["impl_split"]["unmeasured"]["bytes"]
got = [(m.group(1), int(m.group(2))) for m in re.finditer(
    r'^tlsmeter_unmeasured_bytes_total\{program="[^"]*",copy="([^"]*)"\} (\d+)$', prom, re.M)]
assert want > 0 and len(got) == 1 and got[0][1] == want, (got, want)
assert got[0][0].endswith("stripall/libvendor.so"), got
print("ok %d bytes of %s" % (got[0][1], got[0][0]))
PY
        fi
    fi
    # Summary mode: no sockread line per read, the copy's socket reads summed (what "sockets").
    if vendor "summary$proto" TLSMETER_EVENTS=summary; then
        "$A" --json "$TRACE" >"$TRACE.json" 2>/dev/null
        tls_check "analyze-reach vendor TLS $proto summary mode: no sockread lines, socket bytes = the relay's, records = its encrypted ones" \
            "$TLSM_PY" - "$TRACE" "$TRACE.json" "$(relayed)" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
rep = json.load(open(sys.argv[2]))
r_bytes, r_recs, r_enc, r_enc_bytes = (int(x) for x in sys.argv[3].split())
assert not [e for e in ev if e["ev"] in ("sockread", "rec", "read")], "per-event lines in a summary trace"
assert [e for e in ev if e["ev"] == "summary" and e["what"] == "sockets"], "no sockets part"
c = [x for x in rep["copies"] if x["path"].endswith("stripall/libvendor.so")][0]
s = c["socket_reads"]
assert s and s["bytes"] == r_bytes and s["summed"], (s, r_bytes)
assert c["records"] == r_enc and c["record_wire_bytes"] == r_enc_bytes, (c["records"], c["record_wire_bytes"], r_enc, r_enc_bytes)
assert "socket-reads" in [v["id"] for v in rep["verdicts"]]
print("ok %d socket bytes, %d records" % (s["bytes"], c["records"]))
PY
    fi
    if tls_mode_ok hw; then
        if vendor "hw$proto" TLSMETER_CRYPTO=hw; then
            copy_check "vendor TLSMETER_CRYPTO=hw TLS $proto (rerouted records)" "$TRACE" "$(relayed)"
        fi
    else
        skip "analyze-reach hw $proto: $TLS_MODE_SKIP"
    fi
    tls_stop_pid "$PROXY_PID"
    tls_server_stop
done

# A real curl download under TLSMETER_CRYPTO=hw (the golden real-ab-hw.jsonl): no socket reads,
# one copy with crypto code (the system libcrypto): the rerouted records are its records, with
# their plaintext, in --json and in the text of the copies.
"$A" --json "$TLSM_TOP/tests/golden/real-ab-hw.jsonl" >"$d/abhw.json" 2>/dev/null
tls_check "analyze-reach: a curl download rerouted to the hw backend: its libcrypto copy has the records and their plaintext" \
    "$TLSM_PY" - "$d/abhw.json" "$TLSM_TOP/tests/golden/real-ab-hw.jsonl" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
recs = [e for e in map(json.loads, open(sys.argv[2])) if e["ev"] == "rec" and e.get("dir", "in") == "in"]
assert recs and all(e["path"] == "hw" for e in recs), "the golden trace is no longer all rerouted"
(c,) = [x for x in rep["copies"] if x["path"].endswith("/libcrypto.so.3")]
assert c["records_rerouted"] == len(recs), (c["records_rerouted"], len(recs))
assert c["plaintext_bytes_rerouted"] == sum(e["pt"] for e in recs), c
assert c["records_rerouted_app"] == sum(e["type"] == 23 for e in recs), c
print("ok %d records, %d B plaintext" % (c["records_rerouted"], c["plaintext_bytes_rerouted"]))
PY

# The RTLD_DEEPBIND plugin: callers whose GOT slots were rewritten, under their copy.
if [[ ${TLSM_SAN:-} == *address* ]]; then
    skip "analyze-reach got: vclient -d dlopens RTLD_DEEPBIND, which ASan refuses (google/sanitizers#611)"
elif tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    p=$d/got
    tls_run "$p" "$p.%p.jsonl" "$V/plugin/vclient" -p "$TLS_PORT" -c "$TLS_CERT" -f big.bin -d \
        -l "$V/first/libvendor.so"
    tls_traces "$p.*.jsonl"
    if [ "$(cat "$p.rc")" != 0 ] || [ "${#TRACES[@]}" -ne 1 ]; then
        fail "analyze-reach got: exit $(cat "$p.rc"), ${#TRACES[@]} traces"
    else
        "$A" --json "${TRACES[0]}" >"$p.json" 2>/dev/null
        "$A" "${TRACES[0]}" >"$p.txt" 2>/dev/null
        tls_check "analyze-reach got: the rewritten callers listed under their copy, as the trace's fwd events say" \
            "$TLSM_PY" - "$p.json" "$p.txt" "${TRACES[0]}" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
txt = open(sys.argv[2]).read()
ev = [json.loads(l) for l in open(sys.argv[3])]
fwd = {(e["lib"], e["from"]) for e in ev if e["ev"] == "fwd" and e.get("reach") == "got"}
assert fwd, "no fwd event with reach got (fixture changed?)"
got = {(c["lib"], x["from"]) for c in rep["copies"] for x in c["callers"] if x["reach"] == "got"}
assert got == fwd, "copies' callers %r, fwd events %r" % (got, fwd)
assert "caller " in txt and "(got:" in txt, "text report without the rewritten callers"
print("ok %d rewritten callers" % len(got))
PY
    fi
    tls_server_stop
fi

# An SSL BIO server: openssl s_server -WWW (traced, one connection) serves big.bin to curl;
# its SSL_write calls stay inside libssl, so the encrypt side says writes-bypassed, with the
# records that carry the bytes curl counted.
port=$(tls_free_port)
p=$d/www
(cd "$TLS_WWW" && exec env LD_PRELOAD="$TLSM_PRELOAD" TLSMETER_OUT="$p.%p.jsonl" openssl s_server \
    -accept "127.0.0.1:$port" -cert "$TLS_CERT" -key "$TLS_KEY" -WWW -naccept 1 </dev/null) \
    >"$p.log" 2>&1 &
spid=$!
TLS_PIDS+=("$spid")
if tls_wait_log "$p.log" ACCEPT "$spid"; then
    n=$(curl -sS --cacert "$TLS_CERT" -o /dev/null -w '%{size_download}' "https://127.0.0.1:$port/big.bin")
    for _ in $(seq 100); do
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.05
    done
    tls_stop_pid "$spid"
    tlsm_jsonl "$p.%p.jsonl"
    tls_traces "$p.*.jsonl"
    "$A" --json "${TRACES[0]:-/nonexistent}" >"$p.json" 2>/dev/null
    tls_check "analyze-reach: s_server -WWW (an SSL BIO): writes-bypassed on the encrypt side, its records carry the $n bytes curl got" \
        "$TLSM_PY" - "$p.json" "${TRACES[0]:-/nonexistent}" "$n" "$BODY" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
ev = [json.loads(l) for l in open(sys.argv[2])]
got, body = int(sys.argv[3]), int(sys.argv[4])
assert got == body, "curl got %d, the file is %d" % (got, body)
out = [e for e in ev if e["ev"] == "rec" and e.get("dir") == "out" and e["type"] == 23]
assert not [e for e in ev if e["ev"] == "write"], "write events: the case no longer shows the bypass"
assert sum(e["pt"] for e in out) >= got, (sum(e["pt"] for e in out), got)
v = [v for v in rep["encrypt"]["verdicts"] if v["id"] == "writes-bypassed"]
assert v and v[0]["evidence"]["records_outside_writes"] == len(out), (v, len(out))
print("ok %d records outside writes" % len(out))
PY
else
    fail "analyze-reach: traced s_server -WWW did not start: $(head -c 200 "$p.log")"
fi

# node: the copy in the executable, reached through its tables and patched entry points.
"$TLSM_TOP/scripts/install-deps" --extra "nodejs" >/dev/null 2>&1
if ! command -v node >/dev/null; then
    skip "analyze-reach node: node is not installed (scripts/install-deps --extra nodejs)"
    exit 0
fi
if ! nm -D "$(command -v node)" 2>/dev/null | grep -q ' T SSL_read$'; then
    skip "analyze-reach node: this node links a shared libssl: nothing to reach"
    exit 0
fi
cat >"$d/get.js" <<'JS'
const https = require('https'), fs = require('fs');
let n = 0;
https.get({host: '127.0.0.1', port: +process.argv[2], path: '/big.bin', servername: 'localhost',
           ca: fs.readFileSync(process.argv[3])}, res => {
  res.on('data', d => { n += d.length; });
  res.on('end', () => console.log(n));
}).on('error', e => { console.error('request:', e.code || e.message); process.exit(4); });
JS
if tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    p=$d/node
    tls_run "$p" "$p.%p.jsonl" node "$d/get.js" "$TLS_PORT" "$TLS_CERT"
    tls_traces "$p.*.jsonl"
    if [ "$(cat "$p.rc")" != 0 ] || [ "$(cat "$p.out")" != "$BODY" ] || [ "${#TRACES[@]}" -ne 1 ]; then
        fail "analyze-reach node: exit $(cat "$p.rc"), output '$(head -c 100 "$p.out")', ${#TRACES[@]} traces"
    else
        "$A" --json "${TRACES[0]}" >"$p.json" 2>/dev/null
        "$A" "${TRACES[0]}" >"$p.txt" 2>/dev/null
        tls_check "analyze-reach node: its copy named with reach table+entry, no socket reads, records covering the $BODY bytes node counted" \
            "$TLSM_PY" - "$p.json" "$p.txt" "$BODY" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
txt = open(sys.argv[2]).read()
body = int(sys.argv[3])
c = [x for x in rep["copies"] if x["path"].endswith("/node")]
assert len(c) == 1, [(x["path"], x["reach"]) for x in rep["copies"]]
c = c[0]
assert set(c["reach"].split("+")) >= {"table", "entry"}, c["reach"]
assert c["socket_reads"] is None, c["socket_reads"]
assert body <= c["plaintext_bytes"] < body + 8192, (c["plaintext_bytes"], body)
assert rep["bytes_read"] >= body, rep["bytes_read"]
assert "socket-reads" not in [v["id"] for v in rep["verdicts"]]
assert "copies and reach" in txt and "SSL_* entry points patched" in txt, "text section"
print("ok node reach %s, %d records, %d plaintext" % (c["reach"], c["records"], c["plaintext_bytes"]))
PY
    fi
    tls_server_stop
fi
