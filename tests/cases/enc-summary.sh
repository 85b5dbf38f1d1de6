#!/usr/bin/env bash
# enc-summary: summary mode (TLSMETER_EVENTS=summary) keeps the encrypting side as it keeps
# the decrypting one (on the summaries of the decrypting side). openssl s_client uploads 24 MiB to
# tests/tools/hashserver.py (it answers with the sha256 and byte count of what it received:
# the instrument independent of tlsmeter), TLS 1.3 AES-128-GCM:
# - TLSMETER_EVENTS=both, split into its event lines and its summary events (one upload, two
#   representations): the analyzer's "encrypt" object of the two agrees exactly on records,
#   application records, bytes written, writes and the per-cipher records and bytes, and its
#   crypto share of CPU within 1 point; the decrypt figures agree too and hold no dir-out
#   record (the rec_len histogram of the decrypting side counts only its own records).
# - TLSMETER_EVENTS=summary alone: no rec, read or write event; the encrypt object's bytes
#   written are exactly what s_client was given (its RAW head and the file, which the
#   server's byte count confirms), >= 1 record per 16 KiB of it; the per-connection table of
#   the encrypt object is the connection's sending totals (conn close wbytes);
#   --direction out --folded says it needs an event trace (no per-record weights in a
#   summary), as --chrome does.
# - Without the summary's dir-out parts (the preload before this case) the encrypt object is
#   missing: the checks above fail.
# tlsm-arch: x86_64 aarch64
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload enc-summary
ANALYZE=${TLSM_ANALYZE:-$O/tlsmeter-analyze}
analyze() { run_target "$ANALYZE" "$@"; }
BIG=$((24 * 1024 * 1024 + 123))
under_qemu && BIG=$((2 * 1024 * 1024 + 123))
head -c "$BIG" /dev/urandom >"$d/big.bin"
want="sha256=$(tls_sha "$d/big.bin") bytes=$BIG"

tls_hashserver_start "$d" "enc-summary" || exit 0
{ printf 'RAW %d\n' "$BIG"; cat "$d/big.bin"; } >"$d/req"
SENT=$(tls_size "$d/req")

# upload MODE: s_client sends req; PREFIX $d/MODE; checks the server's answer.
upload() {
    TLS_ENV=("TLSMETER_EVENTS=$1")
    tls_run "$d/$1" "$d/$1.%p.jsonl" openssl s_client -connect "127.0.0.1:$PORT" -quiet \
        -nocommands -CAfile "$TLS_CERT" -servername localhost -tls1_3 \
        -ciphersuites TLS_AES_128_GCM_SHA256 <"$d/req"
    TLS_ENV=()
    if [ "$(cat "$d/$1.rc")" != 0 ] || ! grep -qx "$want" "$d/$1.out"; then
        fail "enc-summary $1: exit $(cat "$d/$1.rc"), answer '$(head -c 120 "$d/$1.out")', want '$want'"
        return 1
    fi
    tls_traces "$d/$1.*.jsonl"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "enc-summary $1: ${#TRACES[@]} traces, want 1"
        return 1
    fi
    TRACE=${TRACES[0]}
}

if upload both; then
    analyze -q --jsonl "$TRACE" >"$d/both.jl" 2>/dev/null
    "$TLSM_PY" "$TLSM_TOOLS/split_both.py" "$d/both.jl" "$d/split.ev.jsonl" "$d/split.sum.jsonl"
    analyze --json "$d/split.sum.jsonl" >"$d/sum.json" 2>"$d/sum.err"
    analyze --json "$d/split.ev.jsonl" >"$d/ev.json" 2>"$d/ev.err"
    check "enc-summary: the summary's encrypt object agrees with the events of the same upload" \
        "$TLSM_PY" - "$d/sum.json" "$d/ev.json" "$d/split.ev.jsonl" <<'EOF'
import json, sys
s, e = (json.load(open(p)) for p in sys.argv[1:3])
ev = [json.loads(l) for l in open(sys.argv[3])]
assert "encrypt" in s, "no encrypt object from the summary events (keys %s)" % sorted(s)
se, ee = s["encrypt"], e["encrypt"]
for k in ("records", "records_app", "bytes_written", "writes", "impl"):
    assert se.get(k) is not None and se.get(k) == ee.get(k), "encrypt %s: summary %r, events %r" % (k, se.get(k), ee.get(k))
out = [r for r in ev if r["ev"] == "rec" and r.get("dir") == "out"]
assert se["records"] == len(out), (se["records"], len(out))
ks = [(c["cipher"], c["path"], c["impl"], c["records"], c["bytes"]) for c in se["ciphers"]]
ke = [(c["cipher"], c["path"], c["impl"], c["records"], c["bytes"]) for c in ee["ciphers"]]
assert ks and ks == ke, "encrypt per cipher: summary %r, events %r" % (ks, ke)
a, b = se["crypto_share_cpu"], ee["crypto_share_cpu"]
assert abs(a - b) <= 0.01, "encrypt crypto share of CPU: summary %.4f, events %.4f" % (a, b)
for k in ("records", "bytes_read", "reads"):
    assert s[k] == e[k], "decrypt %s: summary %r, events %r" % (k, s[k], e[k])
inr = [r for r in ev if r["ev"] == "rec" and r.get("dir", "in") == "in"]
assert s["record_len"]["count"] == len(inr), "decrypt record_len counts %d records, %d decrypted" % (s["record_len"]["count"], len(inr))
assert se["record_len"]["count"] == len(out), (se["record_len"]["count"], len(out))
print("ok encrypt %d records, %d bytes written, %d writes, share %.4f / %.4f; decrypt %d records"
      % (se["records"], se["bytes_written"], se["writes"], a, b, s["records"]))
EOF
fi

if upload summary; then
    analyze -q --jsonl "$TRACE" >"$d/summary.jl" 2>/dev/null
    analyze --json "$TRACE" >"$d/summary.json" 2>"$d/summary.err"
    analyze --direction out --folded "$TRACE" >"$d/summary.folded" 2>"$d/folded.err"
    check "enc-summary: --direction out --folded on a summary trace says it needs events" \
        grep -q "summary trace.*--folded needs an event trace" "$d/folded.err"
    check "enc-summary: summary trace: encrypt bytes written = the $SENT bytes s_client sent (server: $BIG of body), records cover them, conn table from the close" \
        "$TLSM_PY" - "$d/summary.jl" "$d/summary.json" "$SENT" "$d/summary.folded" <<'EOF'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
rep = json.load(open(sys.argv[2]))
sent = int(sys.argv[3])
kinds = {e["ev"] for e in ev}
assert not kinds & {"rec", "read", "write"}, "per-event lines in a summary trace: %s" % kinds
assert any(e["ev"] == "summary" and e.get("dir") == "out" and e["what"] == "process_out" for e in ev), \
    "no process_out part"
enc = rep.get("encrypt")
assert enc, "no encrypt object"
assert enc["bytes_written"] == sent, "bytes written %d, sent %d" % (enc["bytes_written"], sent)
assert enc["records_app"] >= sent // 16384, (enc["records_app"], sent)
assert enc["records"] >= enc["records_app"] and enc["writes"] >= 1, enc
tab = enc["conn_table"]
close = [e for e in ev if e["ev"] == "conn" and e["phase"] == "close"]
assert len(tab) == 1 and len(close) == 1 and tab[0]["bytes"] == close[0]["wbytes"] == sent, (tab, close)
assert tab[0]["records"] == close[0]["wrecs"], (tab, close)
print("ok %d bytes written in %d writes, %d records (%d app), conn table %r"
      % (enc["bytes_written"], enc["writes"], enc["records"], enc["records_app"], tab[0]["bytes"]))
EOF
fi
