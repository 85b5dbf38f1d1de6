#!/usr/bin/env python3
"""stats_trace.py: traces with known ns/B distributions for tests/cases/analyze-stats.sh, and
an independent computation of the analyzer's per-record statistics from any trace.

  stats_trace.py gen SCENARIO OUT.jsonl     write a generated trace (seeded: same every run)
  stats_trace.py check TRACE ANALYZER.json  recompute from TRACE what the analyzer's --json
                                            says (size classes per cipher and per bucket,
                                            left-out counts, crypto estimate, share bounds);
                                            prints one "ok ..." line per figure, exit 1 on a
                                            disagreement
  stats_trace.py expect TRACE KEY           print one figure computed from TRACE (KEY:
                                            bulk-median:CIPHER, mean-nspb-all:CIPHER, ...)

The computation here follows docs/analyzer.md ("Per-record ns/B") from the trace lines alone,
sorting exact values; the analyzer bins them (1.09 % bins), so medians and p90 agree within
TOL_PCT, means and counts exactly.
"""
import json
import math
import random
import sys

TOL_PCT = 0.012  # bin half-width 0.55 %, plus rounding of the JSON reals
CLASSES = ("tiny", "small", "bulk")
CAPS_HW = {"aesni": True, "pclmulqdq": True, "ssse3": True, "avx2": True}
CAPS_TABLE = {"aesni": False, "pclmulqdq": False, "ssse3": False, "avx2": False}


def size_class(pt):
    return "tiny" if pt < 256 else "small" if pt < 2048 else "bulk"


# ---------------------------------------------------------------- generation


class Gen:
    def __init__(self, cputime, caps, seed):
        self.rnd = random.Random(seed)
        self.lines = []
        self.t = 1000
        self.recs = 0
        self.cputime = cputime
        self.caps = caps

    def header(self, why=None):
        h = {"ev": "header", "format": 1, "tool": "tlsmeter", "version": "0.1.0", "pid": 4242,
             "comm": "gen", "exe": "/usr/bin/gen", "start_unix_ns": 1764489600000000000,
             "clock": "tsc", "arch": "x86_64", "cpu": "generated", "crypto_mode": "native",
             "cpu_crypto": ["aes", "pclmulqdq"] if self.caps["aesni"] else []}
        if self.cputime:
            h["cputime"] = self.cputime
        if why:
            h["cputime_why"] = why
        self.lines.append(h)
        self.lines.append({"ev": "lib", "id": 1, "path": "/usr/lib/libcrypto.so.3",
                           "version": "OpenSSL 3.0.19", "has_ssl": True, "has_crypto": True,
                           "role": "app", "caps": self.caps})
        self.lines.append({"ev": "conn", "t": 500, "tid": 7, "conn": 1, "phase": "open",
                           "role": "client", "proto": "TLSv1.3",
                           "suite": "TLS_AES_128_GCM_SHA256", "hs_ns": 100000})

    def rec(self, cipher, pt, nspb, gcm_fn, preempt=0, off_ns=0, fixed_ns=0, stall_ns=0):
        # stall_ns: time no method sees (an interrupt, a VM's steal) inside the record, under
        # every cputime method: the preload flags such a record `stall`.
        ns = int(round(fixed_ns + nspb * pt)) + stall_ns
        r = {"ev": "rec", "t": self.t, "tid": 7, "conn": 1, "read": 0, "dir": "in",
             "tls": "1.3", "type": 23, "len": pt + 17, "pt": pt, "cipher": cipher,
             "crypto_ns": ns + (off_ns if self.cputime != "perf-clock" else 0),
             "path": "native", "tag_ok": True, "lib": 1}
        if gcm_fn == "tail":  # stitched kernel: the GCM hook sees only the tail blocks
            r.update(gcm_fn="ctr32", gcm_bytes=pt % 96 + 1, gcm_ns=50)
        elif gcm_fn:
            r.update(gcm_fn=gcm_fn, gcm_bytes=pt + 1, gcm_ns=max(ns - 100, 1))
        if preempt and self.cputime:  # a wall trace cannot tell (its off_ns stays in)
            r["preempt"] = preempt
        if off_ns and self.cputime == "perf-clock":
            r["wall_ns"] = ns + off_ns
        if stall_ns:
            r["stall"] = 1
        self.lines.append(r)
        self.t += r["crypto_ns"] + 2000
        self.recs += 1

    def lognormal(self, median, sigma):
        return median * math.exp(self.rnd.gauss(0, sigma))

    def calib(self, cipher, impl, nspb):
        self.lines.append({"ev": "calib", "t": 800, "cipher": cipher, "impl": impl,
                           "mode": "hw", "lib": 99, "record": 16384, "records": 64,
                           "ns_per_byte": nspb})

    def end(self, user_ns=None, sys_ns=0, wall_ns=None):
        wall = wall_ns if wall_ns is not None else self.t + 1000
        self.lines.append({"ev": "end", "t": wall, "events": len(self.lines) + 1, "dropped": 0,
                           "user_ns": user_ns if user_ns is not None else 3 * wall,
                           "sys_ns": sys_ns, "wall_ns": wall, "hooks": {}, "unfired": [],
                           "preempted": sum(1 for x in self.lines if x.get("preempt")),
                           "stalled": sum(1 for x in self.lines if x.get("stall"))})

    def write(self, path):
        with open(path, "w") as f:
            for x in self.lines:
                f.write(json.dumps(x, separators=(",", ":")) + "\n")


def mixed(g, preempt_every=10, stall_every=13):
    """Hardware AES-128-GCM: tiny, small and bulk records with their own costs, every
    preempt_every-th bulk record switched out for 20x its time, every stall_every-th other one
    stalled (and the first small record: no record of its class before it); ChaCha20 bulk
    records too."""
    for i in range(900):
        k = i % 3
        if k == 0:
            g.rec("AES-128-GCM", g.rnd.randint(5, 250), g.lognormal(30, 0.4), "ctr32",
                  stall_ns=400000 if i % (3 * stall_every) == 3 * 7 else 0)
        elif k == 1:
            g.rec("AES-128-GCM", g.rnd.randint(256, 2047), g.lognormal(2.5, 0.3), "both",
                  stall_ns=250000 if i == 1 else 0)
        else:
            pt = g.rnd.choice((4096, 8192, 16384))
            nspb = g.lognormal(0.3, 0.15)
            out = (i // 3) % preempt_every == 0
            st = not out and (i // 3) % stall_every == 5
            g.rec("AES-128-GCM", pt, nspb, "tail", preempt=1 if out else 0,
                  off_ns=int(19 * nspb * pt) if out else 0, stall_ns=int(40 * nspb * pt) if st else 0)
    for _ in range(200):
        g.rec("ChaCha20-Poly1305", 16384, g.lognormal(0.8, 0.1), None)


def scenario(name):
    if name in ("switch", "perfclock", "wall"):
        cputime = {"switch": "perf-switch", "perfclock": "perf-clock", "wall": None}[name]
        g = Gen(cputime, CAPS_HW, 11)
        g.header("no cap_user_time" if name == "switch" else None)
        mixed(g)
        g.end()
    elif name == "undercount":
        # Crypto above the process CPU (tick-based accounting) and above wall x 1 thread.
        g = Gen("perf-clock", CAPS_HW, 12)
        g.header()
        mixed(g, preempt_every=1 << 30, stall_every=1 << 30)
        crypto = sum(x["crypto_ns"] for x in g.lines if x["ev"] == "rec" and x.get("dir", "in") == "in")
        g.end(user_ns=crypto // 3, sys_ns=crypto // 10, wall_ns=crypto // 2)
    elif name == "tiny-hw":
        # mosquitto_pub's shape on AES-NI: tiny records, all bytes through _ctr32 (OpenSSL
        # hands records too short for the stitched kernel to ctr32), ~40 ns/B of fixed work.
        g = Gen("perf-clock", CAPS_HW, 13)
        g.header()
        g.calib("AES-128-GCM", "hardware", 0.16)
        g.calib("ChaCha20-Poly1305", "vector", 0.25)
        for _ in range(400):
            pt = g.rnd.randint(20, 120)
            g.rec("AES-128-GCM", pt, 0.2, "ctr32", fixed_ns=g.lognormal(2500, 0.2))
        g.end()
    elif name in ("bulk-soft", "few-bulk"):
        # Table AES: bulk records at ~6.5 ns/B, tiny records dominated by fixed work.
        g = Gen("perf-clock", CAPS_TABLE, 14)
        g.header()
        g.calib("AES-128-GCM", "hardware", 0.16)
        g.calib("ChaCha20-Poly1305", "vector", 0.25)
        nbulk = 300 if name == "bulk-soft" else 10
        for i in range(600 + nbulk):
            if i % 2 == 0 and nbulk:
                nbulk -= 1
                g.rec("AES-128-GCM", 16384, g.lognormal(6.5, 0.05), "decrypt")
            else:
                g.rec("AES-128-GCM", g.rnd.randint(10, 200), 6.5, "decrypt",
                      fixed_ns=g.lognormal(9000, 0.2))
        g.end()
    elif name == "huge":
        # Hostile numbers: sums, estimates and wall x threads must saturate, not overflow.
        g = Gen("perf-switch", CAPS_HW, 15)
        g.header()
        big = (1 << 62) - 1
        for i in range(40):
            g.rec("AES-128-GCM", 1 << 40, 1e6, "tail", preempt=i % 2)
            g.lines[-1].update(crypto_ns=big, tid=7 + i, t=1000 + i)
        g.end(user_ns=big, sys_ns=big, wall_ns=big)
    else:
        sys.exit(f"stats_trace.py: unknown scenario {name}")
    return g


# ---------------------------------------------------------------- independent computation


def read_trace(path):
    hdr, end, recs = {}, {}, []
    with open(path, "rb") as f:
        for raw in f:
            raw = raw.strip(b"\0\n ")
            if not raw:
                continue
            try:
                o = json.loads(raw)
            except ValueError:
                continue
            ev = o.get("ev")
            if ev == "header":
                hdr = o
            elif ev == "end":
                end = o
            elif ev == "rec" and o.get("dir", "in") == "in":
                recs.append(o)
    return hdr, end, recs


def pct(sorted_vals, p):
    rank = max(1, math.ceil(p * len(sorted_vals) - 1e-9))
    return sorted_vals[rank - 1]


class Figures:
    """Per (key, class): values of ns/B used, records, left out, crypto estimate."""

    def __init__(self, hdr, recs, keyf):
        exact = hdr.get("cputime") == "perf-clock"
        self.d = {}
        sums = {}  # per (instance, cipher, path) and class: earlier records not switched out
        for r in recs:
            pt, ns = max(r.get("pt", 0), 0), max(r["crypto_ns"], 0)
            c = self.d.setdefault((keyf(r), size_class(pt)),
                                  {"vals": [], "recs": 0, "left": [], "ns": 0, "w": 0})
            c["recs"] += 1
            c["ns"] += ns
            # A record's on-CPU weight: a switched-out one counts pt at the ns/B of the records
            # of its bucket and class before it (at most its own ns), else its own ns.
            bk = (r.get("lib", 0), r.get("cipher", ""), r.get("path", ""), size_class(pt))
            b = sums.setdefault(bk, [0, 0])
            # A stalled one (rec.stall) likewise under every method; before its class has any
            # records, at the ns/B of another class of its bucket (bulk first), else 0.
            stall = r.get("stall", 0) > 0
            out = stall or (r.get("preempt", 0) > 0 and not exact)
            if out and pt and b[1]:
                c["w"] += min(ns, pt * b[0] // b[1])
            elif stall:
                o = [sums.get(bk[:3] + (k,)) for k in reversed(CLASSES)]
                o = [x for x in o if x and x[1]]
                c["w"] += min(ns, pt * o[0][0] // o[0][1]) if o and pt else 0
            else:
                c["w"] += ns
            if not out:
                b[0] += ns
                b[1] += pt
            if out:
                c["left"].append((pt, ns))
            elif pt:
                c["vals"].append(ns / pt)
        for c in self.d.values():
            c["vals"].sort()

    def classes(self, key):
        out = {}
        for k in CLASSES:
            c = self.d.get((key, k), {"vals": [], "recs": 0, "left": [], "ns": 0, "w": 0})
            v = c["vals"]
            f = {"records": c["recs"], "in_ns_per_byte": len(v), "left_out": len(c["left"])}
            f["mean"] = sum(v) / len(v) if v else None
            f["median"] = pct(v, 0.5) if v else None
            f["p90"] = pct(v, 0.9) if v else None
            f["crypto_ns"] = c["w"]
            out[k] = f
        return out


def close(a, b, rel):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-9


class Checker:
    def __init__(self):
        self.bad = 0

    def cmp(self, what, got, want, rel):
        if close(got, want, rel):
            print(f"ok {what}: {got} (computed {want})")
        else:
            print(f"MISMATCH {what}: analyzer {got}, computed from the trace {want}")
            self.bad += 1

    def classes(self, where, got, want):
        for k in CLASSES:
            for key in ("records", "in_ns_per_byte", "left_out"):
                self.cmp(f"{where} {k} {key}", got[k][key], want[k][key], 0)
            self.cmp(f"{where} {k} mean", got[k]["mean"], want[k]["mean"], 2e-5)
            for key in ("median", "p90"):
                self.cmp(f"{where} {k} {key}", got[k][key], want[k][key], TOL_PCT)
            # The weights are integers as the analyzer's; the tolerance is for hostile sums,
            # which the analyzer saturates.
            self.cmp(f"{where} {k} crypto_ns", got[k]["crypto_ns"], want[k]["crypto_ns"],
                     TOL_PCT)


def check(trace, report):
    hdr, end, recs = read_trace(trace)
    with open(report) as f:
        rep = json.load(f)
    ck = Checker()
    per_cipher = Figures(hdr, recs, lambda r: r.get("cipher", ""))
    for c in rep["record_ns_per_byte"]:
        ck.classes(f"cipher {c['cipher']}", c, per_cipher.classes(c["cipher"]))
    per_bucket = Figures(hdr, recs, lambda r: (r.get("lib", 0), r.get("cipher", ""),
                                               r.get("path", "")))
    for b in rep["buckets"]:
        key = (b["lib"], b["cipher"], b["path"])
        ck.classes(f"bucket {key}", b["size_classes"], per_bucket.classes(key))
    crypto = sum(f["crypto_ns"] for key, _ in per_bucket.d.items()
                 for f in [per_bucket.classes(key[0])[key[1]]])
    ck.cmp("crypto_ns (on-CPU estimate)", rep["crypto_ns"], crypto, TOL_PCT)
    ck.cmp("crypto_ns_written", rep["crypto_ns_written"],
           sum(max(r["crypto_ns"], 0) for r in recs), 0)
    exact = hdr.get("cputime") == "perf-clock"
    left = sum(1 for r in recs if r.get("preempt", 0) > 0 and not exact and not r.get("stall"))
    ck.cmp("records_left_out", rep["records_left_out"], left, 0)
    ck.cmp("records_stalled", rep.get("records_stalled", 0),
           sum(1 for r in recs if r.get("stall", 0) > 0), 0)
    if end.get("user_ns") is not None:
        # The CPU of the traced span: the end line's minus the header's CPU at the start.
        cpu = end["user_ns"] + end.get("sys_ns", 0) - max(hdr.get("start_cpu_ns", 0), 0)
        ck.cmp("crypto_share_cpu", rep["crypto_share_cpu"], min(1.0, rep["crypto_ns"] / cpu),
               1e-5)
        ck.cmp("cpu_undercount_ns", rep["cpu_undercount_ns"], max(0, rep["crypto_ns"] - cpu), 0)
    if ck.bad:
        sys.exit(1)


def expect(trace, key):
    hdr, _, recs = read_trace(trace)
    what, cipher = key.split(":", 1)
    figs = Figures(hdr, recs, lambda r: r.get("cipher", "")).classes(cipher)
    if what == "bulk-median":
        print(figs["bulk"]["median"])
    elif what == "mean-nspb-all":  # what a mean over every record would say
        sel = [r for r in recs if r.get("cipher") == cipher and r.get("pt", 0) > 0]
        print(sum(r["crypto_ns"] for r in sel) / sum(r["pt"] for r in sel))
    elif what == "bulk-crypto":
        print(figs["bulk"]["crypto_ns"])
    else:
        sys.exit(f"stats_trace.py: unknown key {key}")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "gen":
        scenario(sys.argv[2]).write(sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "expect":
        expect(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
