#!/usr/bin/env python3
"""enccheck.py: checks of the encrypting side of tlsmeter traces (the upload and server tests).

  enccheck.py records TRACE... [--min-recs N] [--body BYTES] [--tls 1.2|1.3] [--cipher C]
              [--max-pt N] [--path P] [--verify same|mismatch] [--role client|server]
      rec events with dir "out": at least N application-data records; their plaintext sums to
      exactly the bytes the write events wrote (each record is inside one write, and by each
      write at least as many bytes were sealed as written); with --body, the writes minus the HTTP request or RAW head
      (< 4 KiB) are the body; every out record has the given protocol, cipher, path and verify
      word, tag_ok true, pt <= --max-pt (16384 by default); conn close totals (wbytes, wrecs)
      agree with the events.
  enccheck.py analyzer JSON [--impl C] [--verdict ID] [--no-verdict ID] [--in-records N]
              [--in-bytes N] [--out-records N] [--out-bytes N] [--conns-min N]
              [--conns-from TRACE...]
      tlsmeter-analyze --json output: the "encrypt" object exists with the class and verdict
      (its text naming "encryption"), and the top-level (decrypt) figures are exactly those
      of the dir-in records and read events (--in-records, --in-bytes: counted from the
      traces by the caller with `enccheck.py count`).
  enccheck.py count TRACE...
      prints "in_recs=N in_bytes=N out_recs=N out_bytes=N writes=N": the figures the
      analyzer must reproduce, counted here independently.
Prints "ok ..." lines; exits 1 with the first failures on stderr.
"""
import argparse
import json
import sys


def events(paths):
    for p in paths:
        with open(p) as f:
            for line in f:
                line = line.strip()
                if line:
                    yield json.loads(line)


def count(paths):
    c = dict(in_recs=0, in_bytes=0, out_recs=0, out_bytes=0, writes=0)
    for e in events(paths):
        if e.get("ev") == "rec":
            if e.get("dir", "in") == "out":
                c["out_recs"] += 1
            else:
                c["in_recs"] += 1
        elif e.get("ev") == "read" and not e.get("fn", "").startswith("SSL_peek"):
            c["in_bytes"] += max(e.get("got", 0), 0)
        elif e.get("ev") == "write":
            c["writes"] += 1
            c["out_bytes"] += max(e.get("written", 0), 0)
    return c


def check_records(a, bad):
    out, writes, closes = [], {}, []
    for e in events(a.traces):
        if e.get("ev") == "rec" and e.get("dir") == "out":
            out.append(e)
        elif e.get("ev") == "write":
            writes[e["id"]] = e
        elif e.get("ev") == "conn" and e.get("phase") == "close":
            closes.append(e)
    app = [r for r in out if r.get("type") == 23]
    if len(app) < a.min_recs:
        bad.append("%d application-data records dir out, want >= %d" % (len(app), a.min_recs))
    written = sum(max(w.get("written", 0), 0) for w in writes.values())
    pt = sum(r["pt"] for r in app)
    if pt != written:
        bad.append("out records carry %d plaintext bytes, the writes wrote %d" % (pt, written))
    per = {}
    for r in app:
        if not r.get("write"):
            bad.append("application-data record outside a write: %s" % r)
            break
        per[r["write"]] = per.get(r["write"], 0) + r["pt"]
    # A write that returns WANT_WRITE may already have sealed records (libssl keeps them and
    # the retry sends them without sealing again): the bytes then count in a later write's
    # written. So, in write order: sealed so far >= written so far, equal at the end.
    sealed = done = 0
    for wid in sorted(writes):
        w = writes[wid]
        sealed += per.get(wid, 0)
        done += max(w.get("written", 0), 0)
        if sealed < done:
            bad.append("by write %d, %d bytes written but only %d sealed" % (wid, done, sealed))
            break
        if w.get("recs", 0) != sum(1 for r in out if r.get("write") == wid):
            bad.append("write %d counts %d records, %d name it" % (
                wid, w.get("recs", 0), sum(1 for r in out if r.get("write") == wid)))
            break
    if a.body is not None and not 0 < written - a.body < 4096:
        bad.append("writes total %d bytes for a %d-byte body (head %d)" % (written, a.body,
                                                                          written - a.body))
    for r in out:
        want = {"tls": a.tls, "cipher": a.cipher, "path": a.path, "verify": a.verify}
        for k, v in want.items():
            if v is not None and r.get(k) != v:
                bad.append("out record with %s %r, want %r: %s" % (k, r.get(k), v, r))
                break
        if r.get("tag_ok") is not True or r.get("pt", 0) > a.max_pt or r.get("len", 0) <= r["pt"]:
            bad.append("out record not sealed as expected (tag_ok, pt <= %d, len > pt): %s"
                       % (a.max_pt, r))
        if bad:
            break
    wb = sum(c.get("wbytes", 0) for c in closes)
    if closes and wb != written:
        bad.append("conn close events total wbytes %d, the writes %d" % (wb, written))
    if not bad:
        print("ok %d out records (%d application data, %d bytes) in %d writes"
              % (len(out), len(app), pt, len(writes)))


def check_analyzer(a, bad):
    with open(a.json) as f:
        d = json.load(f)
    enc = d.get("encrypt")
    if enc is None:
        bad.append("no \"encrypt\" object in the analyzer's --json")
        return
    if a.impl and enc.get("impl") != a.impl:
        bad.append("encrypt.impl %r, want %r" % (enc.get("impl"), a.impl))
    vids = {v.get("id"): v for v in enc.get("verdicts", [])}
    if a.verdict:
        v = vids.get(a.verdict)
        if not v:
            bad.append("encrypt.verdicts has no %s (has %s)" % (a.verdict, sorted(vids)))
        elif "encrypt" not in v.get("text", ""):
            bad.append("encrypt verdict %s does not name the encrypt side: %s" % (a.verdict,
                                                                                v.get("text")))
        elif a.gain is not None and not v.get("evidence", {}).get("expected_gain", -1) > a.gain:
            bad.append("encrypt verdict %s gives no expected gain above %g: %s"
                       % (a.verdict, a.gain, v.get("text")))
    if a.no_verdict and a.no_verdict in vids:
        bad.append("encrypt.verdicts has %s: %s" % (a.no_verdict, vids[a.no_verdict]["text"]))
    if a.in_records is not None and d.get("records") != a.in_records:
        bad.append("decrypt records %r, the traces hold %d dir-in records" % (d.get("records"),
                                                                             a.in_records))
    if a.in_bytes is not None and d.get("bytes_read") != a.in_bytes:
        bad.append("decrypt bytes_read %r, the reads got %d" % (d.get("bytes_read"), a.in_bytes))
    if a.out_records is not None and enc.get("records") != a.out_records:
        bad.append("encrypt.records %r, the traces hold %d dir-out records"
                   % (enc.get("records"), a.out_records))
    if a.out_bytes is not None and enc.get("bytes_written") != a.out_bytes:
        bad.append("encrypt.bytes_written %r, the writes wrote %d" % (enc.get("bytes_written"),
                                                                      a.out_bytes))
    if a.conns_min is not None and enc.get("connections", 0) < a.conns_min:
        bad.append("encrypt.connections %r, want >= %d" % (enc.get("connections"), a.conns_min))
    if a.conns_from:
        want = {}
        for path in a.conns_from:
            for e in events([path]):
                if e.get("ev") == "write" and e.get("written", 0) > 0:
                    k = (path, e["conn"])
                    want[k] = want.get(k, 0) + e["written"]
        rows = enc.get("conn_table", [])
        got = {(r["file"], r["conn"]): r["bytes"] for r in rows}
        bytes_col = [r["bytes"] for r in rows]
        if got != want:
            bad.append("encrypt.conn_table %s, the traces' writes per connection %s"
                       % (sorted(got.items())[:4], sorted(want.items())[:4]))
        elif bytes_col != sorted(bytes_col, reverse=True):
            bad.append("encrypt.conn_table not sorted by bytes: %s" % bytes_col)
    if not bad:
        print("ok analyzer: encrypt impl %s, %s records, verdicts %s; decrypt records %s"
              % (enc.get("impl"), enc.get("records"), sorted(vids), d.get("records")))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("records")
    r.add_argument("traces", nargs="+")
    r.add_argument("--min-recs", type=int, default=1)
    r.add_argument("--body", type=int)
    r.add_argument("--tls")
    r.add_argument("--cipher")
    r.add_argument("--path")
    r.add_argument("--verify")
    r.add_argument("--max-pt", type=int, default=16384)
    an = sub.add_parser("analyzer")
    an.add_argument("json")
    an.add_argument("--impl")
    an.add_argument("--verdict")
    an.add_argument("--no-verdict")
    an.add_argument("--gain", type=float, help="the --verdict has an expected_gain > GAIN")
    an.add_argument("--in-records", type=int)
    an.add_argument("--in-bytes", type=int)
    an.add_argument("--out-records", type=int)
    an.add_argument("--out-bytes", type=int)
    an.add_argument("--conns-min", type=int)
    an.add_argument("--conns-from", nargs="+", help="traces: encrypt.conn_table must be their "
                    "writes per connection, most bytes first")
    c = sub.add_parser("count")
    c.add_argument("traces", nargs="+")
    a = p.parse_args()
    if a.cmd == "count":
        print(" ".join("%s=%d" % kv for kv in count(a.traces).items()))
        return 0
    bad = []
    (check_records if a.cmd == "records" else check_analyzer)(a, bad)
    for b in bad[:4]:
        print(b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
