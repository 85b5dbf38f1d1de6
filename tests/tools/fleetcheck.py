#!/usr/bin/env python3
"""fleetcheck.py: what Prometheus holds of tlsmeter's counters equals tlsmeter-analyze --json
over the same traces, per program, direction and implementation class.

  fleetcheck.py --port P --analyzer A [--tolerance F] [--expect PROG:DIR:CLASS]... TRACE...

The traces are grouped by program (their comm, from --json of each); each group's --json is
the reference. For every program and direction (in: the JSON's top level, out: its `encrypt`
object) it compares, from Prometheus's HTTP API (/api/v1/query, the latest samples):
  - records, on-CPU crypto time and ciphertext bytes in total;
  - the same per class group of the JSON's `impl_split` (hardware; software = table + vector;
    unknown), against the sums of tlsmeter_*_total by class;
  - records per class, against the JSON's cipher rows (each row's class, `impl`);
  - SSL_read/SSL_write calls and the bytes they returned or wrote.
Equal within the tolerance (relative, default 0.001) and one unit (Prometheus holds float64
seconds). With --docs FILE, the PromQL of FILE's blocks marked <!-- promql: NAME --> runs as
written: software-share-total and software-bytes-total against the --json figures (software
crypto time over all crypto time per program; software plaintext per host), the rate forms
must answer. --expect asks that Prometheus has record bytes of CLASS for PROG and DIR (e.g.
curl:in:table). Prints one line per comparison; exits 1 on any mismatch.
"""
import argparse
import json
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import promquery  # noqa: E402

GROUPS = {"hardware": ["hardware"], "software": ["table", "vector"], "unknown": ["unknown"]}


def analyze(analyzer, files):
    out = subprocess.run([analyzer, "--json", "-q"] + files, capture_output=True, text=True)
    if out.returncode not in (0, 3):
        raise SystemExit("fleetcheck: %s --json %s: exit %d: %s" %
                         (analyzer, " ".join(files), out.returncode, out.stderr[:300]))
    return json.loads(out.stdout)


def by_program(analyzer, files):
    """{program: [(file, its --json)]}"""
    groups = {}
    for f in files:
        j = analyze(analyzer, [f])
        comm = j["traces"][0]["comm"] if j.get("traces") else None
        if not comm:
            raise SystemExit("fleetcheck: %s: no comm in --json" % f)
        groups.setdefault(comm, []).append((f, j))
    return groups


class Check:
    def __init__(self, a):
        self.a, self.bad, self.n = a, 0, 0

    def prom(self, expr):
        """The query's samples as {class or "": value}."""
        ss = promquery.instant(self.a, expr)
        return {labels.get("class", ""): v for labels, v in ss}

    def same(self, what, want, got, scale=1.0):
        self.n += 1
        got_u = got * scale
        ok = abs(got_u - want) <= max(self.a.tolerance * abs(want), 1.0)
        print("%s %s: --json %s, Prometheus %s" %
              ("ok  " if ok else "BAD ", what, want, round(got_u, 3)))
        self.bad += not ok


def class_records(per_trace, d):
    """Records per class from each trace's --json alone (a trace's rows have one class each,
    where a group's rows merge traces of several); None when a row of one trace is mixed."""
    rows = {}
    for j in per_trace:
        side = j if d == "in" else j.get("encrypt") or {}
        for r in side.get("ciphers") or []:
            if r.get("impl_mixed"):
                return None
            rows[r["impl"]] = rows.get(r["impl"], 0) + r["records"]
    return rows


def check_dir(c, prog, d, j, per_trace):
    sel = 'program="%s",dir="%s"' % (prog, d)
    rec = c.prom('sum by (class) (tlsmeter_records_total{%s})' % sel)
    ns = c.prom('sum by (class) (tlsmeter_crypto_seconds_total{%s})' % sel)
    ct = c.prom('sum by (class) (tlsmeter_record_bytes_total{%s})' % sel)
    tag = "%s %s" % (prog, d)
    c.same(tag + " records", j["records"], sum(rec.values()))
    c.same(tag + " crypto ns", j["crypto_ns"], sum(ns.values()), 1e9)
    split = j.get("impl_split") or {}
    for g, classes in GROUPS.items():
        part = split.get(g) or {"bytes": 0, "crypto_ns": 0}
        c.same(tag + " %s record bytes" % g, part["bytes"], sum(ct.get(k, 0) for k in classes))
        c.same(tag + " %s crypto ns" % g, part["crypto_ns"],
               sum(ns.get(k, 0) for k in classes), 1e9)
    rows = class_records(per_trace, d)
    for k in sorted(set(rows or {}) | set(rec)) if rows is not None else []:
        c.same(tag + " %s records" % k, rows.get(k, 0), rec.get(k, 0))
    calls = c.prom('sum(tlsmeter_ssl_calls_total{%s})' % sel).get("", 0)
    got = c.prom('sum(tlsmeter_ssl_bytes_total{%s})' % sel).get("", 0)
    c.same(tag + " SSL calls", j["reads"] if d == "in" else j["writes"], calls)
    c.same(tag + " SSL bytes", j["bytes_read"] if d == "in" else j["bytes_written"], got)


def docs_queries(path):
    text = open(path).read()
    return {m.group(1): m.group(2) for m in re.finditer(
        r"<!-- promql: ([\w-]+) -->\n```promql\n(.*?)\n```", text, re.S)}


def check_docs(c, path, groups):
    q = docs_queries(path)
    for name in ("software-share", "software-share-total", "software-bytes", "software-bytes-total"):
        if name not in q:
            raise SystemExit("fleetcheck: %s has no query marked %s" % (path, name))
    share = {labels.get("program"): v for labels, v in promquery.instant(c.a, q["software-share-total"])}
    soft_pt = 0
    for prog, traces in sorted(groups.items()):
        sw = tot = 0
        for _, j in traces:
            for side in (j, j.get("encrypt") or {}):
                split = side.get("impl_split") or {}
                sw += (split.get("software") or {}).get("crypto_ns", 0)
                tot += side.get("crypto_ns", 0)
            soft_pt += sum(x.get("plaintext_bytes", 0) for x in j.get("copies") or []
                           if x.get("class") in ("table", "vector"))
        if tot:
            c.same("docs software-share-total %s (x 1e6)" % prog, round(sw / tot * 1e6, 3),
                   share.get(prog, 0), 1e6)
    pt = [v for _, v in promquery.instant(c.a, q["software-bytes-total"])]
    c.same("docs software-bytes-total (the host)", soft_pt, sum(pt))
    for name in ("software-share", "software-bytes"):
        ss = promquery.instant(c.a, q[name])
        c.n += 1
        ok = bool(ss) and all(v == v for _, v in ss)  # answers, no NaN
        print("%s docs %s answers: %s" % ("ok  " if ok else "BAD ", name, ss))
        c.bad += not ok


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--analyzer", required=True)
    p.add_argument("--tolerance", type=float, default=0.001)
    p.add_argument("--expect", action="append", default=[])
    p.add_argument("--docs")
    p.add_argument("traces", nargs="+")
    a = p.parse_args()
    a.time = None
    c = Check(a)
    groups = by_program(a.analyzer, a.traces)
    for prog in sorted(groups):
        files = [f for f, _ in groups[prog]]
        per_trace = [j for _, j in groups[prog]]
        j = analyze(a.analyzer, files)
        print("%s: %d trace(s)" % (prog, len(files)))
        if j.get("records"):
            check_dir(c, prog, "in", j, per_trace)
        if (j.get("encrypt") or {}).get("records"):
            check_dir(c, prog, "out", j["encrypt"], per_trace)
        hs = j.get("handshake") or {}
        sel = 'program="%s"' % prog
        c.same(prog + " handshakes", hs.get("connections", 0),
               c.prom("sum(tlsmeter_handshakes_total{%s})" % sel).get("", 0))
        c.same(prog + " full handshakes", hs.get("full", 0),
               c.prom('sum(tlsmeter_handshakes_total{%s,kind="full"})' % sel).get("", 0))
        c.same(prog + " handshake ns", hs.get("ns", 0),
               c.prom("sum(tlsmeter_handshake_seconds_total{%s})" % sel).get("", 0), 1e9)
    if a.docs:
        check_docs(c, a.docs, groups)
    for e in a.expect:
        prog, d, cls = e.split(":")
        v = c.prom('sum by (class) (tlsmeter_record_bytes_total{program="%s",dir="%s",'
                   'class="%s"})' % (prog, d, cls)).get(cls, 0)
        c.n += 1
        print("%s %s %s: %s record bytes of class %s" % ("ok  " if v > 0 else "BAD ", prog, d,
                                                        int(v), cls))
        c.bad += not v > 0
    print("%d comparisons, %d mismatches" % (c.n, c.bad))
    return 1 if c.bad or not c.n else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except promquery.PromError as e:
        print("fleetcheck: %s" % e, file=sys.stderr)
        sys.exit(2)
