#!/usr/bin/env python3
"""perfetto_check.py DECODED TRACE.jsonl...: check `protoc --decode` text of a --perfetto
file against the traces it was made from: one process track per trace, one thread track per
(trace, tid), and per thread exactly one record slice per rec event and one read slice per
read event, begin/end balanced, each slice's end - begin = the event's crypto_ns (records) or
ns (reads), with the event's conn and plaintext length as annotations. Prints what it found;
exit 1 on the first mismatch."""
import collections
import json
import re
import sys


def parse(text):
    """protoc's text format, nested blocks into dicts of lists."""
    tok = re.compile(r'\s*(?:(\w+)\s*\{|(\})|(\w+):\s*("(?:[^"\\]|\\.)*"|[^\s]+))')
    stack = [collections.defaultdict(list)]
    pos = 0
    while pos < len(text):
        m = tok.match(text, pos)
        if not m:
            if text[pos:].strip():
                raise SystemExit(f"cannot parse protoc output at {pos}: {text[pos:pos + 60]!r}")
            break
        pos = m.end()
        if m.group(1):
            child = collections.defaultdict(list)
            stack[-1][m.group(1)].append(child)
            stack.append(child)
        elif m.group(2):
            stack.pop()
        else:
            v = m.group(4)
            stack[-1][m.group(3)].append(v[1:-1] if v.startswith('"') else v)
    return stack[0]


def main():
    trace = parse(open(sys.argv[1]).read())
    packets = trace["packet"]
    procs, threads, slices, open_ = {}, {}, collections.Counter(), {}
    durs = collections.defaultdict(list)
    for p in packets:
        if p.get("track_descriptor"):
            td = p["track_descriptor"][0]
            uuid = int(td["uuid"][0])
            if td.get("process"):
                procs[uuid] = int(td["process"][0]["pid"][0])
            else:
                th = td["thread"][0]
                threads[uuid] = (int(td["parent_uuid"][0]), int(th["tid"][0]))
            continue
        te = p["track_event"][0]
        uuid, ts = int(te["track_uuid"][0]), int(p["timestamp"][0])
        if uuid not in threads:
            raise SystemExit(f"event on track {uuid} before (or without) its descriptor")
        if te["type"][0] == "TYPE_SLICE_BEGIN":
            ann = {a["name"][0]: (a.get("int_value") or a.get("string_value"))[0]
                   for a in te.get("debug_annotations", [])}
            open_.setdefault(uuid, []).append((ts, te["categories"][0], ann))
        else:
            # Ends are written right after their begins: the innermost open slice ends.
            t0, cat, ann = open_[uuid].pop()
            slices[(uuid, cat)] += 1
            durs[(uuid, cat)].append((ts - t0, ann))
    if any(open_.values()):
        raise SystemExit("slices left open")
    # The traces' events, per (trace index, tid).
    want, want_durs = collections.Counter(), collections.defaultdict(list)
    pids = []
    for i, path in enumerate(sys.argv[2:]):
        for line in open(path):
            e = json.loads(line)
            if e["ev"] == "header":
                pids.append(e["pid"])
            if e["ev"] in ("rec", "read"):
                cat = "record" if e["ev"] == "rec" else "read"
                want[(i, e["tid"], cat)] += 1
                want_durs[(i, e["tid"], cat)].append(
                    (max(e["crypto_ns"] if cat == "record" else e["ns"], 0), e["conn"]))
    if sorted(procs.values()) != sorted(pids):
        raise SystemExit(f"process tracks {sorted(procs.values())}, traces {sorted(pids)}")
    order = sorted(procs)  # process uuids grow with the trace's index
    got = collections.Counter()
    got_durs = collections.defaultdict(list)
    for (uuid, cat), n in slices.items():
        parent, tid = threads[uuid]
        key = (order.index(parent), tid, cat)
        got[key] += n
        got_durs[key] = [(d, int(a["conn"])) for d, a in durs[(uuid, cat)]]
    if got != want:
        raise SystemExit(f"slices per thread differ: got {dict(got)} want {dict(want)}")
    for k in want:
        if sorted(got_durs[k]) != sorted(want_durs[k]):
            raise SystemExit(f"{k}: slice lengths or conns differ from the events' figures")
    print(f"{len(procs)} processes, {len(threads)} threads, "
          f"{sum(v for (t, c), v in slices.items() if c == 'record')} record and "
          f"{sum(v for (t, c), v in slices.items() if c == 'read')} read slices, all matching")


if __name__ == "__main__":
    main()
