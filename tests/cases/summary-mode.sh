#!/usr/bin/env bash
# summary-mode: TLSMETER_EVENTS=summary keeps records and reads as totals and histograms and
# writes summary events instead of a line per record and read. A 1 GiB loopback download
# (tests/progs/smallread, 16 KiB reads) in summary mode: a trace under 64 KiB with no rec or
# read event, the bytes of an event-mode run of the same download. One download traced with
# TLSMETER_EVENTS=both, split into its event lines and its summary events: the analyzer's
# --json of the two agrees on records, bytes, reads, the implementation and verdicts, per
# cipher, and the crypto share of CPU within 1 point (the same records two ways, so this
# holds on a loaded machine too). TLSMETER_INTERVAL=1 on a slower download writes snapshots
# during the run whose deltas add up. --chrome on a summary trace says it needs events. The
# program's output is the same in every mode. Threads' read sums, kept per thread, add up to
# the program's own bytes and calls, with peeks, across snapshots; a forked child's start
# from zero. About 40 s.
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"

d=$(case_dir)
trap tls_cleanup EXIT
tls_init "$d"
truncate -s 1G "$TLS_WWW/big.bin"
tls_server_start 1.3 TLS_AES_128_GCM_SHA256 || {
    fail "summary-mode: no server"
    exit 0
}
SR=$TLSM_PROGS/smallread
A=$O/tlsmeter-analyze
TLS_RUN_TIMEOUT=120

tls_run "$d/plain" "" "$SR" "$TLS_PORT" "$TLS_CERT" /big.bin 16384
for m in summary all both; do
    TLS_ENV=("TLSMETER_EVENTS=$m")
    tls_run "$d/$m" "$d/$m.%p.jsonl" "$SR" "$TLS_PORT" "$TLS_CERT" /big.bin 16384
    check "summary-mode: the program's output is the same (TLSMETER_EVENTS=$m)" \
        tls_same_run x "$d/plain" "$d/$m"
done
TLS_ENV=()
declare -A tr
for m in summary all both; do
    tls_traces "$d/$m.*.jsonl"
    tr[$m]=${TRACES[0]:-}
    if [ -z "${tr[$m]}" ]; then
        fail "summary-mode: no trace of the TLSMETER_EVENTS=$m run"
        exit 0
    fi
    # The trace as written (format 2 by default) and as JSON Lines, for the checks below.
    "$A" -q --jsonl "${tr[$m]}" >"$d/$m.jl" 2>"$d/$m.jl.err"
done
check "summary-mode: summary trace $(tls_size "${tr[summary]}") bytes < 64 KiB, no rec or read event, the bytes of the event run" \
    "$TLSM_PY" -c 'import json, os, sys
p, q, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
assert size < 65536, size
ev = [json.loads(l) for l in open(p)]
kinds = [e["ev"] for e in ev]
assert "rec" not in kinds and "read" not in kinds, "per-event lines in a summary trace"
assert kinds.count("summary") >= 2 and kinds[-1] == "end", kinds
got = sum(e.get("got", 0) for e in ev if e["ev"] == "summary" and e["what"] == "process")
want = sum(json.loads(l).get("got", 0) for l in open(q) if "\"ev\":\"read\"" in l)
assert got == want and got > 1 << 30, (got, want)' "$d/summary.jl" "$d/all.jl" \
    "$(tls_size "${tr[summary]}")"

# One download, two representations: its event lines and its summary events.
"$TLSM_PY" "$TLSM_TOOLS/split_both.py" "$d/both.jl" "$d/split.ev.jsonl" "$d/split.sum.jsonl"
"$A" --json "$d/split.sum.jsonl" >"$d/sum.json" 2>"$d/sum.err"
"$A" --json "$d/split.ev.jsonl" >"$d/ev.json" 2>"$d/ev.err"
check "summary-mode: analyzer --json of the summary agrees with the events of the same download" \
    "$TLSM_PY" - "$d/sum.json" "$d/ev.json" <<'EOF'
import json, sys
s, e = (json.load(open(p)) for p in sys.argv[1:3])
for k in ("records", "bytes_read", "reads", "records_app", "impl"):
    a, b = s.get(k), e.get(k)
    assert a is not None and a == b, "%s: summary %r, events %r" % (k, a, b)
assert s["records"] >= 65536, s["records"]
cs, ce = s["crypto_share_cpu"], e["crypto_share_cpu"]
assert abs(cs - ce) <= 0.01, "crypto share of CPU: summary %.4f, events %.4f" % (cs, ce)
ks = [(c["cipher"], c["path"], c["impl"], c["records"], c["bytes"]) for c in s["ciphers"]]
ke = [(c["cipher"], c["path"], c["impl"], c["records"], c["bytes"]) for c in e["ciphers"]]
assert ks and ks == ke, "per cipher: summary %r, events %r" % (ks, ke)
vs, ve = sorted(v["id"] for v in s["verdicts"]), sorted(v["id"] for v in e["verdicts"])
assert vs == ve, "verdicts: summary %r, events %r" % (vs, ve)
print("ok", s["records"], s["bytes_read"], s["reads"], cs, ce, ks, vs)
EOF

# Unsplit, a TLSMETER_EVENTS=both trace is read from its events (its summaries not counted twice).
"$A" --json "${tr[both]}" >"$d/both.json" 2>"$d/both.err"
check "summary-mode: a TLSMETER_EVENTS=both trace counts each record once" \
    "$TLSM_PY" -c 'import json, sys
b, e = (json.load(open(p)) for p in sys.argv[1:3])
assert (b["records"], b["bytes_read"], b["reads"]) == (e["records"], e["bytes_read"], e["reads"]), \
    (b["records"], e["records"])' "$d/both.json" "$d/ev.json"

# Snapshots during the run: a download slowed by 1-byte reads at TLSMETER_INTERVAL=1.
truncate -s 48M "$TLS_WWW/mid.bin"
TLS_ENV=(TLSMETER_EVENTS=summary TLSMETER_INTERVAL=1)
tls_run "$d/slow" "$d/slow.%p.jsonl" "$SR" "$TLS_PORT" "$TLS_CERT" /mid.bin 1
TLS_ENV=()
tls_traces "$d/slow.*.jsonl"
"$A" -q --jsonl "${TRACES[0]:-/nonexistent}" >"$d/slow.jl" 2>/dev/null
check "summary-mode: TLSMETER_INTERVAL=1 writes snapshots during the run; their deltas add up" \
    "$TLSM_PY" -c 'import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
seqs = sorted({e["seq"] for e in ev if e["ev"] == "summary"})
assert len(seqs) >= 2, "snapshots %r" % seqs
got = sum(e.get("got", 0) for e in ev if e["ev"] == "summary" and e["what"] == "process")
reads = sum(e.get("reads", 0) for e in ev if e["ev"] == "summary" and e["what"] == "process")
body = int(open(sys.argv[2]).read().split("body=")[1].split()[0])
assert got >= body and reads >= body, (got, reads, body)
finals = [e for e in ev if e.get("final")]
assert finals and all(e["seq"] == seqs[-1] for e in finals), "final flag"' \
    "$d/slow.jl" "$d/slow.out"

# Threads: each keeps its read sums itself and the snapshot adds them up, live threads' and
# exited ones' (trace/thread.c). 6 threads x 3 connections of 64-byte reads (threads end at
# different times) at TLSMETER_INTERVAL=1, and 2 threads peeking before each read: every
# delta >= 0, bytes equal to what mtclient says it got, calls equal to the histograms' sums.
for n in 0 1 2 3 4 5; do truncate -s 3M "$TLS_WWW/t$n.bin"; done
MT=$TLSM_PROGS/mtclient
TLS_ENV=(TLSMETER_EVENTS=summary TLSMETER_INTERVAL=1)
tls_run "$d/mt" "$d/mt.%p.jsonl" "$MT" -p "$TLS_PORT" -c "$TLS_CERT" -t 6 -n 3 -r 64 \
    /t0.bin /t1.bin /t2.bin /t3.bin /t4.bin /t5.bin
tls_run "$d/pk" "$d/pk.%p.jsonl" "$MT" -p "$TLS_PORT" -c "$TLS_CERT" -t 2 -n 1 -r 512 -k /t0.bin
TLS_ENV=()
for r in mt pk; do
    tls_traces "$d/$r.*.jsonl"
    check "summary-mode: threads ($r): per-thread sums add up to the program's bytes and calls" \
        "$TLSM_PY" - "${TRACES[0]:-/nonexistent}" "$d/$r.out" "$d/$r.rc" <<'EOF'
import json, re, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert open(sys.argv[3]).read().strip() == "0", "mtclient failed"
parts = [e for e in ev if e["ev"] == "summary" and e["what"] == "process"]
assert parts, "no process part"
for e in parts:
    for k, v in e.items():
        if isinstance(v, int) and k not in ("t", "seq", "tid"):
            assert 0 <= v < 1 << 40, "%s = %d in snapshot %d: a delta went negative" % (k, v, e["seq"])
tot = lambda k: sum(e.get(k, 0) for e in parts)
hist = lambda k: sum(c for e in parts for _, c in e.get(k, []))
lines = re.findall(r"got=(\d+) body=\d+ sha256=\S+ ok=1", open(sys.argv[2]).read())
got = sum(int(g) for g in lines)
assert got > 0 and tot("got") == got, "bytes: summary %d, mtclient %d" % (tot("got"), got)
assert tot("reads") == tot("reads_ok") + tot("reads_fail") > 0
calls = tot("reads") + tot("peeks")
assert hist("read_want_log2") == calls == hist("recs_per_read_log2"), (hist("read_want_log2"), calls)
assert hist("read_got_log2") >= tot("reads_ok")
if "pk" in sys.argv[1]:
    assert tot("peeks") >= len(lines), "peeks %d" % tot("peeks")
print("ok", len({e["seq"] for e in parts}), "snapshots", tot("reads"), "reads", tot("peeks"), "peeks", got, "bytes")
EOF
done

# fork() without exec: the child's summary starts from zero (its sums, not the parent's), the
# parent's holds its two downloads: each trace's bytes are what forkclient says its process got.
truncate -s 2M "$TLS_WWW/f.bin"
TLS_ENV=(TLSMETER_EVENTS=summary)
tls_run "$d/fk" "$d/fk.%p.jsonl" "$TLSM_PROGS/forkclient" "$TLS_PORT" "$TLS_CERT" /f.bin
TLS_ENV=()
check "summary-mode: fork: parent and child summaries count their own reads" \
    "$TLSM_PY" - "$d" "$d/fk.out" "$d/fk.rc" <<'EOF'
import glob, json, re, sys
assert open(sys.argv[3]).read().strip() == "0", "forkclient failed"
got = {}
for role, pid, n in re.findall(r"^(\w+) pid=(\d+) ppid=\d+ got=(\d+)", open(sys.argv[2]).read(), re.M):
    got[pid] = got.get(pid, 0) + int(n)
assert len(got) == 2, got
for pid, want in got.items():
    ev = [json.loads(l) for l in open(glob.glob("%s/fk.%s.jsonl" % (sys.argv[1], pid))[0])]
    have = sum(e.get("got", 0) for e in ev if e["ev"] == "summary" and e["what"] == "process")
    assert have == want, "pid %s: summary %d bytes, forkclient %d" % (pid, have, want)
print("ok", got)
EOF

# Summary mode's own losses are named: records past the writer's buckets (lost_recs) and
# threads past its live list at exit (threads_unlisted) and socket reads of more copies than
# it keeps (lost_sockreads), written into the final snapshot.
"$TLSM_PY" -c 'import json, sys
out = open(sys.argv[2], "w")
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["ev"] == "summary" and e["what"] == "process" and e.get("final"):
        e["lost_recs"], e["threads_unlisted"], e["lost_sockreads"] = 3, 2, 4
    out.write(json.dumps(e) + "\n")' "$d/summary.jl" "$d/lossy.jsonl"
"$A" "$d/lossy.jsonl" >"$d/lossy.txt" 2>&1
"$A" "$d/summary.jl" >"$d/whole.txt" 2>&1
check "summary-mode: the report names records no bucket held, socket reads no part held and threads no snapshot holds" \
    sh -c 'grep -q "3 records counted in no summary bucket" "$1" &&
        grep -q "2 threads running at exit" "$1" && grep -q "4 socket reads of more than 8" "$1" &&
        ! grep -q "summary bucket\|running at exit\|socket reads of more" "$2"' \
    sh "$d/lossy.txt" "$d/whole.txt"

"$A" --chrome "${tr[summary]}" >"$d/chrome.json" 2>"$d/chrome.err"
check "summary-mode: --chrome on a summary trace says it needs per-event data" \
    grep -q "summary trace" "$d/chrome.err"
