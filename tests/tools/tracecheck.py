#!/usr/bin/env python3
"""tracecheck.py: check a tlsmeter trace against docs/trace-format.md and what a client saw.

Always checked: every line is a JSON object with a string `ev`, newline-terminated; exactly
one `header` (first, format 1) and one `end` (last); `end.events` counts the lines before it;
`end.dropped` is 0; every `rec.pt` <= 16384; a `rec` naming a read matches that read's conn
and tid; a read's `recs`/`crypto_ns` are the sums over its records.
Options add checks against the client's view (bytes, suite, threads, fork, secrets) and, for
TLSMETER_CRYPTO runs, the decrypt path and the `end.reroute` counters.
Prints `ok FILE: summary` or one line per problem; exit 0 when all checks hold, 1 otherwise,
2 when the file cannot be read.
"""
import argparse
import subprocess
import collections
import json
import math
import os
import re
import stat
import sys


def is_peek(r):
    """SSL_peek/SSL_peek_ex: bytes a later read returns again."""
    return str(r.get("fn", "")).startswith("SSL_peek")

IANA = {
    "ECDHE-RSA-AES128-GCM-SHA256": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "ECDHE-RSA-AES256-GCM-SHA384": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "ECDHE-RSA-CHACHA20-POLY1305": "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
}
MAX_PT = 16384
# Trace format 2 (binary) starts with this; it is checked in its JSON Lines form, printed by
# tlsmeter-analyze --jsonl ($TLSM_ANALYZER, else $O/tlsmeter-analyze).
MAGIC2 = b"\x89TLSMTR\n"


def jsonl_form(path):
    a = os.environ.get("TLSM_ANALYZER") or os.path.join(
        os.environ.get("O", os.path.join(os.path.dirname(__file__), "..", "..", "build")),
        "tlsmeter-analyze")
    p = subprocess.run([a, "-q", "--jsonl", path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


class Trace:
    def __init__(self, path):
        self.path = path
        self.errors = []
        self.events = []
        with open(path, "rb") as f:
            self.raw = self.data = f.read()
        self.format2 = self.raw.startswith(MAGIC2)
        if self.format2:
            rc, self.data, why = jsonl_form(path)
            if rc:
                self.err("tlsmeter-analyze --jsonl failed (exit %d): %s" % (rc, why.strip()))
        self.parse()

    def err(self, msg):
        self.errors.append(msg)

    def parse(self):
        if not self.data:
            self.err("empty trace")
            return
        if not self.data.endswith(b"\n"):
            self.err("last line not newline-terminated")
        for n, line in enumerate(self.data.split(b"\n")[:-1] if self.data.endswith(b"\n")
                                 else self.data.split(b"\n"), 1):
            try:
                ev = json.loads(line.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                self.err("line %d: not JSON (%s)" % (n, e))
                continue
            if not isinstance(ev, dict) or not isinstance(ev.get("ev"), str):
                self.err("line %d: not an object with a string ev" % n)
                continue
            ev["_line"] = n
            self.events.append(ev)
        self.by = collections.defaultdict(list)
        for ev in self.events:
            # Encrypted records (dir "out") are kept apart: every check here is of the
            # decrypting side; tests/tools/enccheck.py checks the encrypting one.
            kind = "rec_out" if ev["ev"] == "rec" and ev.get("dir") == "out" else ev["ev"]
            self.by[kind].append(ev)

    def first(self, kind):
        return self.by[kind][0] if self.by[kind] else {}


def int_field(t, ev, key):
    v = ev.get(key)
    if not isinstance(v, int) or isinstance(v, bool):
        t.err("line %d: %s.%s is %r, want an integer" % (ev["_line"], ev["ev"], key, v))
        return 0
    return v


def check_frame(t, a):
    evs = t.events
    if not evs:
        return
    if evs[0]["ev"] != "header":
        t.err("first line is %r, not header" % evs[0]["ev"])
    if evs[-1]["ev"] != "end":
        t.err("last line is %r, not end" % evs[-1]["ev"])
    for kind in ("header", "end"):
        if len(t.by[kind]) != 1:
            t.err("%d %s lines, want 1" % (len(t.by[kind]), kind))
    h, e = t.first("header"), t.first("end")
    if h and h.get("format") != 1:
        t.err("header.format is %r, want 1" % h.get("format"))
    if h and h.get("tool") != "tlsmeter":
        t.err("header.tool is %r" % h.get("tool"))
    if e:
        if int_field(t, e, "events") != e["_line"] - 1:
            t.err("end.events is %r but %d lines precede end" % (e.get("events"), e["_line"] - 1))
        if not a.allow_dropped and int_field(t, e, "dropped") != 0:
            t.err("end.dropped is %r, want 0" % e.get("dropped"))
    if a.arch and h and h.get("arch") != a.arch:
        t.err("header.arch is %r, want %s" % (h.get("arch"), a.arch))
    if a.emulated and h and h.get("emulated") is not True:
        t.err("header.emulated is %r, want true (the run was under qemu)" % h.get("emulated"))
    if a.openssl and t.by["rec"]:
        # The copy that decrypted: every lib event that records name must be that version.
        used = {r.get("lib") for r in t.by["rec"]}
        libs = [l for l in t.by["lib"] if l.get("id") in used]
        bad = [l.get("version") for l in libs if not str(l.get("version", "")).startswith(a.openssl)]
        if not libs or bad:
            t.err("the records' OpenSSL copies are %s, want %s..." %
                  ([l.get("version") for l in libs] or "none", a.openssl))
    if a.pid is not None and h.get("pid") != a.pid:
        t.err("header.pid is %r, want %d" % (h.get("pid"), a.pid))
    if a.fork_of is not None and h.get("fork_of") != a.fork_of:
        t.err("header.fork_of is %r, want %d" % (h.get("fork_of"), a.fork_of))
    if a.fork_of is None and h and "fork_of" in h:
        t.err("header.fork_of %r in a trace that is not a forked child's" % h["fork_of"])
    if a.only_header_end:
        extra = sorted({ev["ev"] for ev in evs} - {"header", "end"})
        if extra:
            t.err("want header and end only, found %s" % ", ".join(extra))


def check_reads_recs(t, a):
    reads = {}
    for r in t.by["read"]:
        rid = int_field(t, r, "id")
        if rid in reads:
            t.err("line %d: read id %d used twice" % (r["_line"], rid))
        reads[rid] = r
        for key in ("got", "want", "conn", "tid", "recs", "crypto_ns", "t", "ns"):
            int_field(t, r, key)
    per_read = collections.defaultdict(lambda: [0, 0])
    for rec in t.by["rec"]:
        for key in ("len", "pt", "crypto_ns", "read", "conn", "tid", "type", "t"):
            int_field(t, rec, key)
        if rec.get("pt", 0) > MAX_PT:
            t.err("line %d: rec.pt %r > %d" % (rec["_line"], rec.get("pt"), MAX_PT))
        if rec.get("dir") != "in":
            t.err("line %d: rec.dir %r, want in" % (rec["_line"], rec.get("dir")))
        if not isinstance(rec.get("tag_ok"), bool):
            t.err("line %d: rec.tag_ok %r not a bool" % (rec["_line"], rec.get("tag_ok")))
        rid = rec.get("read", 0)
        if rid and not a.no_reads:
            r = reads.get(rid)
            if r is None:
                t.err("line %d: rec names read %r, which is not in the trace" % (rec["_line"], rid))
                continue
            for key in ("conn", "tid"):
                if rec.get(key) != r.get(key):
                    t.err("line %d: rec.%s %r but its read %d has %r"
                          % (rec["_line"], key, rec.get(key), rid, r.get(key)))
            per_read[rid][0] += 1
            per_read[rid][1] += rec.get("crypto_ns", 0)
    for rid, r in reads.items():
        if a.no_recs:
            break
        n, ns = per_read.get(rid, (0, 0))
        if r.get("recs") != n:
            t.err("line %d: read %d says recs=%r, %d rec lines name it"
                  % (r["_line"], rid, r.get("recs"), n))
        elif abs(r.get("crypto_ns", 0) - ns) > n:
            # Each value is rounded from clock ticks on its own: allow 1 ns per record.
            t.err("line %d: read %d says crypto_ns=%r, its records sum to %d"
                  % (r["_line"], rid, r.get("crypto_ns"), ns))
    t.reads = reads
    for rec in t.by["rec_out"]:
        for key in ("len", "pt", "crypto_ns", "write", "conn", "tid", "type", "t"):
            int_field(t, rec, key)
        if rec.get("pt", 0) > MAX_PT:
            t.err("line %d: rec.pt %r > %d" % (rec["_line"], rec.get("pt"), MAX_PT))


def norm_cipher(c):
    return str(c).lower().replace("_", "-")


def check_client(t, a):
    # A peek's bytes come back in a later read: only reads count (the preload does the same).
    got = sum(r["got"] for r in t.reads.values()
              if isinstance(r.get("got"), int) and r["got"] > 0 and not is_peek(r))
    app = [r for r in t.by["rec"] if r.get("type") == 23]
    pt = sum(r.get("pt", 0) for r in app)
    t.summary = {"lines": len(t.events), "reads": len(t.reads), "got": got,
                 "recs": len(t.by["rec"]), "app_recs": len(app), "app_pt": pt,
                 "conns": len([c for c in t.by["conn"] if c.get("phase") == "open"])}
    if a.got is not None and got != a.got:
        t.err("sum of read.got is %d, the client read %d bytes" % (got, a.got))
    if a.full_read and not (a.no_recs or a.no_reads) and pt != got:
        t.err("sum of pt over type-23 records is %d, sum of read.got is %d" % (pt, got))
    if a.body is not None and len(app) < math.ceil(a.body / MAX_PT):
        t.err("%d application-data records for a %d-byte body, want >= %d"
              % (len(app), a.body, math.ceil(a.body / MAX_PT)))
    if a.min_recs is not None and len(app) < a.min_recs:
        t.err("%d application-data records, want >= %d" % (len(app), a.min_recs))
    if a.cipher:
        bad = {r.get("cipher") for r in app if norm_cipher(r.get("cipher")) != norm_cipher(a.cipher)}
        if bad:
            t.err("rec cipher %s, want %s" % (sorted(map(str, bad)), a.cipher))
    if a.tls:
        bad = {r.get("tls") for r in t.by["rec"] if r.get("tls") != a.tls}
        if bad:
            t.err("rec tls %s, want %s" % (sorted(map(str, bad)), a.tls))
    check_conns(t, a)
    if a.tamper:
        bad = [r for r in t.by["rec"] if r.get("tag_ok") is False]
        if not bad:
            t.err("no rec with tag_ok:false after a tampered record")
        elif any(r.get("pt") != 0 for r in bad):
            t.err("a rec with tag_ok:false has pt != 0")
    else:
        bad = [r["_line"] for r in t.by["rec"] if r.get("tag_ok") is not True]
        if bad:
            t.err("rec with tag_ok not true on lines %s" % bad[:5])
    if a.no_reads and t.by["read"]:
        t.err("%d read lines with reads disabled" % len(t.by["read"]))
    if a.no_recs and t.by["rec"]:
        t.err("%d rec lines with records disabled" % len(t.by["rec"]))


def check_conns(t, a):
    opens = [c for c in t.by["conn"] if c.get("phase") == "open"]
    if a.conns is not None and len(opens) != a.conns:
        t.err("%d conn open lines, want %d" % (len(opens), a.conns))
    for c in opens:
        if a.proto and c.get("proto") != a.proto:
            t.err("line %d: conn proto %r, want %s" % (c["_line"], c.get("proto"), a.proto))
        if a.suite and c.get("suite") not in (a.suite, IANA.get(a.suite)):
            t.err("line %d: conn suite %r, want %s" % (c["_line"], c.get("suite"), a.suite))
    ids = [c.get("conn") for c in opens]
    if len(set(ids)) != len(ids):
        t.err("a conn id is opened twice: %s" % sorted(i for i in ids if ids.count(i) > 1)[:5])
    for r in list(t.reads.values()) + t.by["rec"]:
        # Records decrypted outside any read (the handshake inside SSL_write or a BIO) may
        # legitimately have no connection yet: conn 0 means "not known".
        if r["ev"] == "rec" and r.get("read") == 0 and r.get("conn") == 0:
            continue
        if a.conns and r.get("conn") not in ids:
            t.err("line %d: %s on conn %r, which has no open line"
                  % (r["_line"], r["ev"], r.get("conn")))
            break
    check_closes(t, a, set(ids))


def check_closes(t, a, opened):
    """A conn closes at most once, after opening; its totals are the sums of its lines."""
    reads = collections.defaultdict(lambda: [0, 0])
    for r in t.reads.values():
        reads[r.get("conn")][0] += 1
        if isinstance(r.get("got"), int) and r["got"] > 0 and not is_peek(r):
            reads[r.get("conn")][1] += r["got"]
    recs = collections.Counter(r.get("conn") for r in t.by["rec"])
    seen = set()
    for c in (c for c in t.by["conn"] if c.get("phase") == "close"):
        cid = c.get("conn")
        if cid in seen:
            t.err("line %d: conn %r closed twice" % (c["_line"], cid))
        seen.add(cid)
        if cid not in opened:
            t.err("line %d: conn %r closed but never opened" % (c["_line"], cid))
        want = {}
        if not a.no_reads:
            want.update(reads=reads[cid][0], got=reads[cid][1])
        if not a.no_recs:
            want["recs"] = recs[cid]
        for key, v in want.items():
            if c.get(key) != v:
                t.err("line %d: conn %r close says %s=%r, its lines sum to %d"
                      % (c["_line"], cid, key, c.get(key), v))
    if a.closed:
        for cid in opened - seen:
            t.err("conn %r opened but never closed (SSL_free)" % cid)


def conn_sequences(t):
    """Per tid, the got-sums of its connections in the order they started."""
    per_conn = {}
    for r in t.reads.values():
        c = per_conn.setdefault(r.get("conn"), {"tids": set(), "t0": r.get("t", 0), "got": 0})
        c["tids"].add(r.get("tid"))
        c["t0"] = min(c["t0"], r.get("t", 0))
        if isinstance(r.get("got"), int) and r["got"] > 0 and not is_peek(r):
            c["got"] += r["got"]
    for cid, c in per_conn.items():
        if len(c["tids"]) != 1:
            t.err("conn %r has reads on %d threads %s" % (cid, len(c["tids"]), sorted(c["tids"])))
    seqs = collections.defaultdict(list)
    for cid, c in sorted(per_conn.items(), key=lambda kv: kv[1]["t0"]):
        seqs[min(c["tids"])].append(c["got"])
    return seqs


def check_mt(t, a):
    want = collections.defaultdict(list)
    with open(a.mt_report) as f:
        for line in f:
            if not line.startswith("conn "):
                continue
            kv = dict(w.split("=", 1) for w in line.split()[1:])
            want[int(kv["tid"])].append((int(kv["seq"]), int(kv["got"])))
    have = conn_sequences(t)
    for tid in sorted(set(want) | set(have)):
        w = [g for _, g in sorted(want.get(tid, []))]
        if have.get(tid) != w:
            t.err("tid %d: trace per-conn got %s, client reported %s" % (tid, have.get(tid), w))


def check_path(t, a):
    """Every application-data record on path a.path; the end.reroute counters agree with the
    rec lines (routed, verified, mismatches)."""
    app = [r for r in t.by["rec"] if r.get("type") == 23]
    if not app:
        t.err("no application-data record to check the path of")
    bad = collections.Counter(str(r.get("path")) for r in app if r.get("path") != a.path)
    if bad:
        t.err("type-23 records on path %s, want all on %s" % (dict(bad), a.path))
    rr = t.first("end").get("reroute")
    if not isinstance(rr, dict):
        t.err("end.reroute missing or not an object: %r" % (rr,))
        return
    if a.path == "native":
        return
    recs = t.by["rec"] + t.by["rec_out"] # end.reroute counts both directions
    want = {"routed": sum(r.get("path") == a.path for r in recs),
            "verified": sum("verify" in r for r in recs),
            "mismatches": sum(r.get("verify") == "mismatch" for r in recs)}
    for key, n in want.items():
        if rr.get(key) != n:
            t.err("end.reroute.%s is %r, the rec lines say %d" % (key, rr.get(key), n))


def check_reroute(t, a):
    """--reroute KEY=V, KEY>N, KEY~REGEX on end.reroute (= compares as text)."""
    rr = t.first("end").get("reroute")
    if not isinstance(rr, dict):
        t.err("end.reroute missing or not an object: %r" % (rr,))
        return
    for cond in a.reroute:
        m = re.match(r"^(\w+)([=>~])(.*)$", cond)
        if not m:
            t.err("bad --reroute condition %r (want KEY=V, KEY>N or KEY~REGEX)" % cond)
            continue
        key, op, want = m.groups()
        v = rr.get(key)
        ok = {"=": lambda: str(v) == want,
              ">": lambda: isinstance(v, int) and v > int(want),
              "~": lambda: isinstance(v, str) and re.search(want, v) is not None}[op]()
        if not ok:
            t.err("end.reroute.%s is %r, want %s%s" % (key, v, op, want))


def windows(data, n):
    return {data[i:i + n] for i in range(len(data) - n + 1)}


def check_secrets(t, a):
    check_secrets_in(t, a, t.data)
    if t.format2:  # the bytes on disk too, not only their JSON form
        check_secrets_in(t, a, t.raw)


def check_secrets_in(t, a, trace):
    wins = windows(trace, 16)
    lower = trace.lower()
    hexwins = windows(lower, 32)
    for path in a.no_plaintext:
        with open(path, "rb") as f:
            pt = f.read()
        for i in range(len(pt) - 15):
            if pt[i:i + 16] in wins:
                t.err("16 plaintext bytes of %s (offset %d) appear in the trace" % (path, i))
                break
        hx = pt.hex().encode()
        for i in range(0, len(hx) - 31, 2):
            if hx[i:i + 32] in hexwins:
                t.err("16 plaintext bytes of %s (offset %d) appear hex-encoded" % (path, i // 2))
                break
    for path in a.keylog:
        with open(path) as f:
            for line in f:
                w = line.split()
                if len(w) != 3 or line.startswith("#"):
                    continue
                secret = w[2].lower().encode()
                if secret in lower or bytes.fromhex(w[2]) in trace:
                    t.err("the %s from the key log appears in the trace" % w[0])


def check_mode(t, a):
    st = os.lstat(t.path)
    if not stat.S_ISREG(st.st_mode):
        t.err("trace is not a regular file")
    if stat.S_IMODE(st.st_mode) != a.mode:
        t.err("trace mode %o, want %o" % (stat.S_IMODE(st.st_mode), a.mode))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--got", type=int, help="bytes the client read from TLS")
    ap.add_argument("--body", type=int, help="body bytes: want >= ceil(body/16384) app records")
    ap.add_argument("--full-read", action="store_true",
                    help="the client read everything: sum of pt (type 23) == sum of got")
    ap.add_argument("--min-recs", type=int)
    ap.add_argument("--cipher", help="rec cipher of every application-data record")
    ap.add_argument("--tls", help="rec tls of every record (1.2, 1.3)")
    ap.add_argument("--proto", help="conn open proto (TLSv1.3)")
    ap.add_argument("--suite", help="conn open suite (OpenSSL or IANA name)")
    ap.add_argument("--conns", type=int, help="number of conn open lines")
    ap.add_argument("--closed", action="store_true", help="every opened conn must close")
    ap.add_argument("--tamper", action="store_true", help="want a rec with tag_ok:false")
    ap.add_argument("--mt-report", help="mtclient output: per-tid per-conn byte counts")
    ap.add_argument("--pid", type=int)
    ap.add_argument("--fork-of", type=int)
    ap.add_argument("--only-header-end", action="store_true")
    ap.add_argument("--no-reads", action="store_true")
    ap.add_argument("--no-recs", action="store_true")
    ap.add_argument("--allow-dropped", action="store_true")
    ap.add_argument("--no-plaintext", action="append", default=[], metavar="FILE")
    ap.add_argument("--keylog", action="append", default=[], metavar="FILE")
    ap.add_argument("--mode", type=lambda s: int(s, 8), default=0o600)
    ap.add_argument("--path", help="every type-23 rec decrypted on this path (native, hw, soft);"
                    " end.reroute agrees with the rec lines")
    ap.add_argument("--reroute", action="append", default=[], metavar="COND",
                    help="end.reroute condition: KEY=V, KEY>N, KEY~REGEX (repeatable)")
    ap.add_argument("--summary", action="store_true", help="print the summary as JSON")
    ap.add_argument("--arch", help="header.arch (x86_64, aarch64)")
    ap.add_argument("--emulated", action="store_true", help="header.emulated must be true (qemu)")
    ap.add_argument("--openssl", help="the records' copies report this version prefix "
                    "(OpenSSL 3.5.)")
    a = ap.parse_args()
    try:
        t = Trace(a.trace)
    except OSError as e:
        print("%s: %s" % (a.trace, e))
        return 2
    t.summary = {}
    check_mode(t, a)
    check_frame(t, a)
    check_reads_recs(t, a)
    check_client(t, a)
    if a.mt_report:
        check_mt(t, a)
    if a.no_plaintext or a.keylog:
        check_secrets(t, a)
    if a.path:
        check_path(t, a)
    if a.reroute:
        check_reroute(t, a)
    if a.summary:
        print(json.dumps(t.summary))
    name = os.path.basename(a.trace)
    for e in t.errors[:20]:
        print("%s: %s" % (name, e))
    if len(t.errors) > 20:
        print("%s: ... %d more problems" % (name, len(t.errors) - 20))
    if t.errors:
        return 1
    print("ok %s: %s" % (name, " ".join("%s=%s" % kv for kv in t.summary.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
