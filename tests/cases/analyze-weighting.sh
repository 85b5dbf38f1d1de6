#!/usr/bin/env bash
# analyze-weighting: classes weighted by bytes, never outvoted by a small connection; TLS the
# trace could not measure never read as "fine"; the --require-hw gate.
# - A written trace: a 1 MiB manifest through the system libcrypto.so.3 (hardware AES, first in
#   the trace) and 256 MiB through a vendor copy (table AES + 4-bit GHASH): the process, the
#   row and the vendor copy are software by bytes, the row says mixed and shows the split, the
#   headline verdict is software-aes (where the CPU went), no "not the bottleneck"; --json has
#   each copy's path, build id, class and byte/time shares, equal to those the trace's records
#   give. --require-hw rejects it (exit 5), --require-hw=99.7 accepts it, =99 rejects it; bad
#   values and options without --require-hw are usage errors that say what was wrong.
# - The hidden vendor SDK of tests/vendor with TLSMETER_PATCH=0 (a blind copy) beside the system
#   copy: the first verdict says what share of the process's CPU the trace explains (against the
#   end line's CPU) and names the copy; no verdict says crypto is not the bottleneck; the gate
#   rejects it unless --allow-blind.
# - The stripped vendor SDK (SSL_read unreachable, socket reads traced): the top line's bytes
#   and --json bytes_received include its socket bytes.
# - The stripped SDK forced to software beside the system copy (a real mixed download): the gate
#   rejects it; a plain curl download through the system OpenSSL passes it.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
A=$O/tlsmeter-analyze
if under_qemu; then
    skip "analyze-weighting: the report is the host's"
    exit 0
fi

# 1. The written trace: records of two copies, the hardware one first.
"$TLSM_PY" - "$d/mixed.jsonl" <<'PY'
import json, sys
out = open(sys.argv[1], "w")
def w(o):
    out.write(json.dumps(o, separators=(",", ":")) + "\n")
caps = {"aesni": True, "pclmulqdq": True, "ssse3": True, "avx": True, "avx2": True}
w({"ev": "header", "format": 1, "tool": "tlsmeter", "version": "0.1.0", "pid": 4242,
   "exe": "/opt/ota/bin/otad", "comm": "otad", "start_unix_ns": 1764489600000000000,
   "arch": "x86_64", "cpu": "AMD EPYC", "cpu_crypto": ["aes", "pclmulqdq"],
   "crypto_mode": "native", "cputime": "perf-clock"})
for lid, path, bid in ((1, "/usr/lib/x86_64-linux-gnu/libcrypto.so.3", "30563306a0d30a4acfe7ce1e066c8696b5e7856f"),
                       (2, "/opt/ota/lib/libfoundation.so", "e11be246130aae4418d7e9d166afd8bd86f10714")):
    w({"ev": "lib", "id": lid, "path": path, "build_id": bid, "has_ssl": lid == 2,
       "has_crypto": True, "version": "OpenSSL 3.0.22 1 Jul 2026", "caps": caps, "role": "app"})
w({"ev": "impl", "id": 1, "lib": 1, "aes": "aesni", "ghash": "clmul-avx", "stitched": True})
w({"ev": "impl", "id": 2, "lib": 2, "aes": "table", "ghash": "4bit", "stitched": False})
t, rid = 1000000, 0
for conn, lib, n, nspb in ((1, 1, 64, 0.25), (2, 2, 16384, 5.3)):
    w({"ev": "conn", "t": t, "tid": 4242, "conn": conn, "phase": "open", "role": "client",
       "proto": "TLSv1.3", "suite": "TLS_AES_128_GCM_SHA256", "hs_ns": 900000, "lib": lib})
    for i in range(n):
        rid += 1
        ns = int(16384 * nspb)
        t += ns + 1000
        w({"ev": "rec", "t": t, "tid": 4242, "conn": conn, "read": rid, "dir": "in", "tls": "1.3",
           "type": 23, "len": 16401, "pt": 16384, "cipher": "AES-128-GCM", "crypto_ns": ns,
           "gcm_ns": 0, "gcm_bytes": 0, "gcm_fn": "none", "path": "native", "tag_ok": True,
           "lib": lib, "impl": lib})
        w({"ev": "read", "id": rid, "t": t + 100, "tid": 4242, "conn": conn, "fn": "SSL_read_ex",
           "want": 16384, "got": 16384, "ns": ns + 500, "recs": 1, "crypto_ns": ns})
    w({"ev": "conn", "t": t, "tid": 4242, "conn": conn, "phase": "close"})
w({"ev": "end", "t": t + 1000, "events": 2 * rid, "dropped": 0, "user_ns": 13 * 10**8,
   "sys_ns": 10**8, "wall_ns": t + 1000, "unfired": [], "blind": []})
PY
"$A" --json "$d/mixed.jsonl" >"$d/mixed.json" 2>"$d/mixed.json.err"
"$A" "$d/mixed.jsonl" >"$d/mixed.txt" 2>"$d/mixed.txt.err"
tls_check "analyze-weighting: 1 MiB hardware + 256 MiB software: process, row and copy are software by bytes, split shown, headline software-aes" \
    "$TLSM_PY" - "$d/mixed.json" "$d/mixed.txt" "$d/mixed.jsonl" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
txt = open(sys.argv[2]).read()
ev = [json.loads(l) for l in open(sys.argv[3])]
recs = [e for e in ev if e["ev"] == "rec"]
# What the trace itself says: bytes the cipher processed (len less the 16-byte tag) and time,
# per copy.
by = {}
for r in recs:
    b = by.setdefault(r["lib"], [0, 0])
    b[0] += r["len"] - 16; b[1] += r["crypto_ns"]
allb, alln = sum(v[0] for v in by.values()), sum(v[1] for v in by.values())
assert rep["impl"] == "table", "process class %s" % rep["impl"]
row = rep["ciphers"]
assert len(row) == 1 and row[0]["impl"] == "table" and row[0]["impl_mixed"], row[0]["impl"]
sp = rep["impl_split"]
assert sp["class"] == "table" and sp["mixed"], sp
assert abs(sp["software"]["share_bytes"] - by[2][0] / allb) < 1e-5, (sp["software"], by)
assert abs(sp["hardware"]["share_bytes"] - by[1][0] / allb) < 1e-5, (sp["hardware"], by)
assert sp["software"]["copies"] == ["/opt/ota/lib/libfoundation.so"], sp["software"]
assert sp["hardware"]["copies"] == ["/usr/lib/x86_64-linux-gnu/libcrypto.so.3"], sp["hardware"]
cp = {c["path"]: c for c in rep["copies"]}
v, s = cp["/opt/ota/lib/libfoundation.so"], cp["/usr/lib/x86_64-linux-gnu/libcrypto.so.3"]
assert v["class"] == "table" and s["class"] == "hardware", (v["class"], s["class"])
assert v["build_id"] == "e11be246130aae4418d7e9d166afd8bd86f10714", v["build_id"]
assert v["version"].startswith("OpenSSL 3.0.22"), v["version"]
for c, lid in ((v, 2), (s, 1)):
    assert c["bytes"] == by[lid][0], (c["path"], c["bytes"], by[lid][0])
    assert c["crypto_ns"] == by[lid][1], (c["path"], c["crypto_ns"], by[lid][1])
    assert abs(c["share_bytes"] - by[lid][0] / allb) < 1e-5, (c["path"], c["share_bytes"])
    assert abs(c["share_crypto"] - by[lid][1] / alln) < 1e-5, (c["path"], c["share_crypto"])
ids = [x["id"] for x in rep["verdicts"]]
assert ids[0] == "software-aes", ids
assert "libfoundation.so" in rep["verdicts"][0]["text"], rep["verdicts"][0]["text"]
assert not [x for x in rep["verdicts"] if "not the bottleneck" in x["text"]], ids
# The text report: the process line and the row with the split, the headline.
impl = [l for l in txt.splitlines() if l.startswith("implementation:")][0]
assert impl.startswith("implementation: table (software for 99.6 % of the bytes"), impl
assert "in libfoundation.so; hardware for 0.39 %" in impl and impl.endswith("in libcrypto.so.3)"), impl
assert "    split: software for 99.6 % of the bytes" in txt, "no split under the row"
first = [l for l in txt.splitlines() if l.startswith("verdict ")][0]
assert first.startswith("verdict      [software-aes] AES-128-GCM decryption is not all in hardware"), first
assert "not the bottleneck" not in txt, "a verdict says crypto is not the bottleneck"
assert "  copy /opt/ota/lib/libfoundation.so (OpenSSL 3.0.22 1 Jul 2026, build id e11be246130a)\n    table: 99.6 % of the bytes" in txt, "no per-copy line"
print("ok software %.4f of the bytes, headline %s" % (sp["software"]["share_bytes"], ids[0]))
PY

# gate NAME WANT_RC STDERR_REGEX ANALYZER_ARGS...: the exit status and the answer on stderr.
gate() {
    local name=$1 want=$2 re=$3 rc
    shift 3
    "$A" "$@" >"$d/gate.out" 2>"$d/gate.err"
    rc=$?
    if [ "$rc" = "$want" ] && grep -Eq "$re" "$d/gate.err"; then
        pass "analyze-weighting gate: $name: exit $rc, $(grep -Em1 "$re" "$d/gate.err" | head -c 200)"
    else
        fail "analyze-weighting gate: $name: exit $rc (want $want), stderr: $(head -c 300 "$d/gate.err")"
    fi
}
gate "mixed trace, default" 5 'require-hw: rejected: software for 99\.6 % of the decrypted bytes \(limit 0 %\)' \
    --require-hw "$d/mixed.jsonl"
gate "mixed trace, --json, default" 5 'require-hw: rejected: software for 99\.6 %' \
    --json --require-hw "$d/mixed.jsonl"
gate "mixed trace, --require-hw=99.7" 0 'require-hw: accepted: software for 99\.6 % of the decrypted bytes \(limit 99\.7 %\)' \
    --require-hw=99.7 "$d/mixed.jsonl"
gate "mixed trace, --require-hw=99" 5 'rejected: software for 99\.6 % .*limit 99 %' \
    --require-hw=99 "$d/mixed.jsonl"
gate "bad PCT" 2 '^tlsmeter-analyze: --require-hw=abc: PCT must be a number from 0 to 100' \
    --require-hw=abc "$d/mixed.jsonl"
gate "PCT above 100" 2 '^tlsmeter-analyze: --require-hw=101: PCT must be a number from 0 to 100' \
    --require-hw=101 "$d/mixed.jsonl"
gate "--allow-blind alone" 2 '^tlsmeter-analyze: --allow-unknown and --allow-blind go with --require-hw$' \
    --allow-blind "$d/mixed.jsonl"
gate "with --folded" 2 '^tlsmeter-analyze: --require-hw goes with the text report or --json$' \
    --folded --require-hw "$d/mixed.jsonl"
"$A" --json --require-hw=99 "$d/mixed.jsonl" >"$d/gate.json" 2>/dev/null
tls_check "analyze-weighting gate: --json carries the answer" "$TLSM_PY" -c 'import json, sys
g = json.load(open(sys.argv[1]))["gate"]
assert g["passed"] is False and g["max_software_pct"] == 99 and abs(g["share_software"] - 256 / 257) < 1e-4, g
assert g["text"].startswith("rejected: software for 99.6 %"), g["text"]' "$d/gate.json"

# 2. Real programs: the vendor SDKs of tests/vendor beside the system copy.
tls_need_preload analyze-weighting
V=$O/vendor
if ! out=$("$TLSM_TOP/tests/vendor/build" "$V" 2>&1); then
    if echo "$out" | grep -q 'libssl-dev\|static archives'; then
        skip "analyze-weighting vendor: $out"
    else
        fail "analyze-weighting: fixtures did not build: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
    fi
    exit 0
fi
BODY=$((8 * 1024 * 1024 + 99))
tls_make_file big.bin "$BODY"
want_sha=$(tls_sha "$TLS_WWW/big.bin")
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "analyze-weighting: openssl s_server did not start"
    exit 0
fi

# vendor NAME DIR VCLIENT_ARGS ENV...: one traced vclient run; sets TRACE, checks the bodies.
vendor() {
    local name=$1 dir=$2 args=$3 p=$d/$1
    shift 3
    TLS_ENV=("$@")
    # shellcheck disable=SC2086
    tls_run "$p" "$p.%p.jsonl" "$V/$dir/vclient" -p "$TLS_PORT" -c "$TLS_CERT" -f big.bin $args
    TLS_ENV=()
    tls_traces "$p.*.jsonl"
    TRACE=${TRACES[0]:-}
    local n
    n=$(grep -c "bytes=$BODY sha256=$want_sha" "$p.out")
    if [ "$(cat "$p.rc")" != 0 ] || [ "$n" -lt 1 ] || [ "${#TRACES[@]}" -ne 1 ]; then
        fail "analyze-weighting $name: vclient exit $(cat "$p.rc"), $n good bodies, ${#TRACES[@]} traces: $(head -c 200 "$p.err")"
        return 1
    fi
}

if vendor blind hidden -s TLSMETER_PATCH=0; then
    "$A" "$TRACE" >"$d/blind.txt" 2>/dev/null
    "$A" --json "$TRACE" >"$d/blind.json" 2>/dev/null
    tls_check "analyze-weighting blind copy (TLSMETER_PATCH=0, hidden SDK): the first verdict says the share of the process CPU the trace explains and names the copy; none says crypto is not the bottleneck" \
        "$TLSM_PY" - "$d/blind.txt" "$d/blind.json" "$TRACE" <<'PY'
import json, sys
txt = open(sys.argv[1]).read()
rep = json.load(open(sys.argv[2]))
ev = [json.loads(l) for l in open(sys.argv[3])]
end = [e for e in ev if e["ev"] == "end"][-1]
hdr = ev[0]
cpu = end["user_ns"] + end["sys_ns"] - hdr.get("start_cpu_ns", 0)  # the traced span's CPU
assert [e for e in ev if e["ev"] == "blind" and e["path"].endswith("hidden/libvendor.so")], "no blind event for the vendor copy"
crypto = rep["crypto_ns"] + rep["handshake"]["ns"]
v = rep["verdicts"][0]
assert v["id"] == "cpu-unexplained", [x["id"] for x in rep["verdicts"]]
assert "hidden/libvendor.so" in v["text"] and "which the trace could not measure" in v["text"], v["text"]
assert abs(v["evidence"]["cpu_ns"] - cpu) <= cpu * 1e-5, (v["evidence"], cpu)
assert abs(v["evidence"]["explained_ns"] - crypto) <= crypto * 1e-5 + 1, (v["evidence"], crypto)
sh = v["evidence"]["share_explained"]
assert 0 < sh < 1 and abs(sh - crypto / cpu) < 1e-4, (sh, crypto, cpu)
assert not [x for x in rep["verdicts"] if "not the bottleneck" in x["text"]], [x["text"] for x in rep["verdicts"]]
assert rep["blind_spots"] == 1, rep["blind_spots"]
first = [l for l in txt.splitlines() if l.startswith("verdict ")][0]
assert first.startswith("verdict      [cpu-unexplained] ") and "of the process's" in first, first
assert "not the bottleneck" not in txt
print("ok the trace explains %.2f %% of %d ns" % (sh * 100, cpu))
PY
    gate "blind copy, default" 5 'rejected: TLS the trace could not measure \(the TLS of .*hidden/libvendor\.so' \
        --require-hw "$TRACE"
    gate "blind copy, --allow-blind" 0 'accepted: .*TLS the trace could not measure allowed' \
        --require-hw --allow-blind "$TRACE"
    "$A" --openmetrics "$TRACE" >"$d/blind.prom" 2>/dev/null
    tls_check "analyze-weighting blind copy: --openmetrics counts the trace under tlsmeter_blind_traces_total for the copy" \
        grep -Eq '^tlsmeter_blind_traces_total\{program="[^"]*",copy="[^"]*hidden/libvendor\.so",what="tls"\} 1$' "$d/blind.prom"
fi

if vendor plt stripall ""; then
    "$A" "$TRACE" >"$d/plt.txt" 2>/dev/null
    "$A" --json "$TRACE" >"$d/plt.json" 2>/dev/null
    tls_check "analyze-weighting copy with SSL_read unreachable: the top line's bytes include its socket bytes" \
        "$TLSM_PY" - "$d/plt.txt" "$d/plt.json" "$BODY" <<'PY'
import json, re, sys
txt = open(sys.argv[1]).read()
rep = json.load(open(sys.argv[2]))
body = int(sys.argv[3])
c = [x for x in rep["copies"] if x["path"].endswith("stripall/libvendor.so")][0]
sock = c["socket_reads"]["bytes"]
assert rep["bytes_received"] == rep["bytes_read"] + sock and rep["bytes_socket_reads"] == sock, rep
assert rep["bytes_received"] >= body, (rep["bytes_received"], body)
line = [l for l in txt.splitlines() if l.startswith("duration")][0]
got = re.search(r"received ([0-9.]+) MiB", line)
assert got and abs(float(got.group(1)) * 2**20 - rep["bytes_received"]) < 0.06 * 2**20, line
assert "on the sockets of copies whose SSL_read tlsmeter cannot reach" in txt
print("ok %s" % line.strip())
PY
fi

if vendor mixed stripall "-m -s"; then
    "$A" --json "$TRACE" >"$d/rmixed.json" 2>/dev/null
    tls_check "analyze-weighting real mixed download: the vendor copy software, the system copy hardware, per copy in --json" \
        "$TLSM_PY" -c 'import json, sys
rep = json.load(open(sys.argv[1]))
cp = {c["path"].rsplit("/", 1)[-1]: c for c in rep["copies"] if c["bytes"]}
assert cp["libvendor.so"]["class"] in ("table", "vector"), cp["libvendor.so"]["class"]
assert cp["libcrypto.so.3"]["class"] == "hardware", cp["libcrypto.so.3"]["class"]
assert rep["impl_split"]["mixed"], rep["impl_split"]
print("ok")' "$d/rmixed.json"
    gate "real mixed download, default" 5 'rejected: software for [0-9.]+ % of the decrypted bytes' \
        --require-hw "$TRACE"
fi

# 3. A plain curl download through the system OpenSSL passes the gate.
if ! tls_client_ok curl; then
    skip "analyze-weighting curl: $TLS_CLIENT_SKIP"
else
    tls_client curl "$TLS_PORT" big.bin "$d/curl" "$d/curl.%p.jsonl"
    tls_traces "$d/curl.*.jsonl"
    if [ "$(cat "$d/curl.rc")" != 0 ] || [ "${#TRACES[@]}" -ne 1 ]; then
        fail "analyze-weighting curl: exit $(cat "$d/curl.rc"), ${#TRACES[@]} traces"
    else
        gate "system-only curl download" 0 'require-hw: accepted: software for 0\.0 % of the decrypted bytes' \
            --require-hw "${TRACES[0]}"
    fi
fi
tls_server_stop
