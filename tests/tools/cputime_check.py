#!/usr/bin/env python3
"""cputime_check: a traced run's crypto time against the kernel's thread CPU clock, and ns/B
and crypto share read straight from traces (independent of the analyzer).

    cputime_check.py summary TRACE...            one line of figures per trace
    cputime_check.py agree [--contended] TRACE...
        for traces taken with TLSMETER_CPUTIME_CHECK=1 (each rec line carries thread_ns, the
        thread clock over the same span, less the cost of one read of it measured just
        before): exit 0 when, over >= 100 records flagged neither `preempt` nor `stall`, the
        method's crypto_ns sum agrees with the thread clock's (within 5 % for perf-clock,
        15 % for methods that read wall time: see TOL); shares <= 100 %; the end
        line's preempted and stalled counts match the flags; and, --contended, that records
        were flagged (unless the method is perf-clock, which needs no flag).

ns/B: sum of crypto_ns over sum of pt of bulk records (pt >= 2048), flagged records left out
(`stall` always; `preempt` unless the trace's cputime is perf-clock: then crypto_ns is exact).
Crypto share: sum of crypto_ns, each left-out record counted as pt x the median ns/B of the
kept records of its size class, over end.user_ns + end.sys_ns."""
import json
import statistics
import sys


def size_class(pt):
    return "tiny" if pt < 256 else "small" if pt < 2048 else "bulk"


def read(path):
    header, end, recs, out_flagged = None, None, [], 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip("\x00\n")
            if not line:
                continue
            o = json.loads(line)
            if o["ev"] == "header":
                header = o
            elif o["ev"] == "rec" and o.get("dir", "in") == "in":
                recs.append(o)
            elif o["ev"] == "rec":
                out_flagged += bool(o.get("preempt") or o.get("stall"))
            elif o["ev"] == "end":
                end = o
    if not header or not end or not recs:
        raise SystemExit("%s: no header, end line or records" % path)
    return header, end, recs, out_flagged


def figures(path):
    header, end, recs, out_flagged = read(path)
    method = header.get("cputime", "wall")
    exact = method == "perf-clock"
    def left_out(r):
        return r.get("stall") or (r.get("preempt") and not exact)

    kept = [r for r in recs if not left_out(r)]
    flagged = [r for r in recs if r.get("preempt") or r.get("stall")]
    medians = {}
    for cls in ("tiny", "small", "bulk"):
        v = [r["crypto_ns"] / r["pt"] for r in kept if r["pt"] > 0 and size_class(r["pt"]) == cls]
        medians[cls] = statistics.median(v) if v else None
    bulk = [r for r in kept if r["pt"] >= 2048]
    if not bulk:
        raise SystemExit("%s: no unflagged bulk record" % path)
    nspb = sum(r["crypto_ns"] for r in bulk) / sum(r["pt"] for r in bulk)
    crypto = 0.0
    for r in recs:
        m = medians[size_class(r["pt"])] if r["pt"] > 0 else None
        if left_out(r) and m is not None:
            crypto += r["pt"] * m
        else:
            crypto += r["crypto_ns"]
    # The CPU of the traced span: the end line's minus the header's CPU at the start.
    cpu = end["user_ns"] + end["sys_ns"] - max(header.get("start_cpu_ns", 0), 0)
    return {
        "path": path, "method": method, "recs": len(recs), "flagged": len(flagged),
        "end_flagged": end.get("preempted", 0) + end.get("stalled", 0),
        "out_flagged": out_flagged, "nspb": nspb,
        "share": 100.0 * crypto / cpu if cpu else float("inf"), "cpu_s": cpu / 1e9,
        "wall_gt_cpu": sum(1 for r in recs if r.get("wall_ns", 0) > r["crypto_ns"]),
    }


def show(f):
    return ("%s: cputime=%s recs=%d flagged=%d ns/B=%.4f share=%.1f%% cpu=%.3fs"
            % (f["path"].rsplit("/", 1)[-1], f["method"], f["recs"], f["flagged"], f["nspb"],
               f["share"], f["cpu_s"]))


# How far a method's sum may stray from the thread clock's. perf-clock reads the task clock
# itself: 5 % (the arm64 VM under TCG: 0.976-0.978). A wall clock (perf-switch, rseq) on this
# KVM guest, client and server on one CPU, agrees within 2-7 % over >= 2000 records: what is
# left is time neither detector sees (steal too short to flag a record as stalled). 15 % still
# fails what the check is for: wall time leaking in at a switch or an interrupt at least
# doubles the sum. (The check's own clock reads once sat inside the wall span, ~2 us a record
# on this guest: 1.2-1.46 then. The span now starts after them, core/record.c rec_begin.)
TOL = {"perf-clock": 0.05}
TOL_WALL = 0.15


def agree(paths, contended):
    bad = []
    for path in paths:
        header, end, recs, out_flagged = read(path)
        f = figures(path)
        method = f["method"]
        timed = [r for r in recs if "thread_ns" in r]
        if not timed:
            bad.append("%s: no thread clock in it (taken without TLSMETER_CPUTIME_CHECK=1?)" % path)
            continue
        kept = [r for r in timed if not r.get("preempt") and not r.get("stall")]
        stalled = [r for r in timed if r.get("stall")]
        ns = sum(r["crypto_ns"] for r in kept)
        thread = sum(r["thread_ns"] for r in kept)  # one read's cost already taken off
        tol = TOL.get(method, TOL_WALL)
        ratio = ns / thread if thread > 0 else float("inf")
        print("%s: %s: %d records kept, method %.2f ms, thread clock %.2f ms, ratio %.3f "
              "(tolerance %.0f %%); %d preempted, %d stalled (%.2f ms of span, "
              "%.2f ms of thread clock); share %.1f %%"
              % (path.rsplit("/", 1)[-1], method, len(kept), ns / 1e6, thread / 1e6, ratio,
                 100 * tol, f["flagged"] - len(stalled), len(stalled),
                 sum(r["crypto_ns"] for r in stalled) / 1e6,
                 sum(r["thread_ns"] for r in stalled) / 1e6, f["share"]))
        if len(kept) < 100:
            bad.append("%s: only %d unflagged records with the thread clock" % (path, len(kept)))
        elif abs(ratio - 1) > tol:
            bad.append("%s: the method's %.2f ms against the thread clock's %.2f ms (ratio %.3f,"
                       " want within %.1f %%)" % (path, ns / 1e6, thread / 1e6, ratio, 100 * tol))
        if f["share"] > 100:
            bad.append("%s: share %.1f %% > 100 %%" % (path, f["share"]))
        if contended and method not in ("perf-clock", "wall") and f["flagged"] < 1:
            bad.append("%s: a busy process on the same CPU, yet no record flagged" % path)
        # end.preempted and end.stalled count the records of both directions (the request's
        # sealed records too), never the handshake parts (those are conn.hs.preempt).
        if f["flagged"] + out_flagged != f["end_flagged"]:
            bad.append("%s: %d records flagged (%d decrypted, %d sealed) but the end line says %d"
                       % (path, f["flagged"] + out_flagged, f["flagged"], out_flagged,
                          f["end_flagged"]))
    for b in bad:
        print("bad " + b)
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "summary":
        for p in argv[1:]:
            print(show(figures(p)))
        return 0
    if len(argv) >= 2 and argv[0] == "agree":
        args, contended = argv[1:], False
        if "--contended" in args:
            args.remove("--contended")
            contended = True
        return agree(args, contended) if args else 2
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
