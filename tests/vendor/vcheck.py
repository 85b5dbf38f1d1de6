#!/usr/bin/env python3
"""vcheck.py: checks of one vendor-layout run (tests/cases/vendor-layouts.sh).

  vcheck.py TRACE --bindings LD_DEBUG_FILES... [--vendor PATH] [--visible | --blind REASON |
            --table] [--mode native|hw|soft] [--soft-vendor] [--min-recs N]

Prints "ok ..." lines and one line per problem; exit 1 on any problem.
- forwarding: every `fwd` event (caller object, function -> target) is what the dynamic
  linker bound without tlsmeter (LD_DEBUG=bindings of an untraced run of the same program);
- records: the OpenSSL copies the records were decrypted by (native) are those the
  linker bound EVP_CipherUpdate to; the vendor's connection has records (visible layouts)
  or a `blind` event names the vendor object with REASON (blind layouts);
- reroute (hw/soft): records of every connection took that path;
- --table: the vendor copy is reached through its provider tables: its lib event
  says reach "table", it has at least --min-recs records (natively: decrypted by it), and it
  is not reported blind;
- --soft-vendor: the vendor copy's lib event has no AES-NI (with --table: its records' impl
  event says table AES), the system copy has it.
"""
import argparse
import collections
import json
import os
import re
import sys

BIND = re.compile(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: normal symbol `([^']+)'")
problems = []


def real(p):
    return os.path.realpath(p) if p else p


def load_bindings(files):
    b = collections.defaultdict(set)
    for f in files:
        for line in open(f, errors="replace"):
            m = BIND.search(line)
            if m:
                b[(real(m.group(1)), m.group(3))].add(real(m.group(2)))
    return b


def load_trace(path):
    evs = collections.defaultdict(list)
    for line in open(path):
        e = json.loads(line)
        evs[e["ev"]].append(e)
    return evs


def check_fwd(evs, bindings):
    n = 0
    for f in evs["fwd"]:
        if f.get("reach") == "entry":  # a copy's own calls into its patched entry points:
            continue                   # no binding exists for LD_DEBUG to show
        for fn in f["fns"]:
            want = bindings.get((real(f["from"]), fn))
            if want is None:
                problems.append(f"fwd {f['from']} {fn} -> {f['to']}: the untraced run never bound it")
            elif real(f["to"]) not in want:
                problems.append(f"fwd {f['from']} {fn} -> {f['to']}, the linker bound {sorted(want)}")
            n += 1
    print(f"ok forwarding: {n} (caller, function) pairs as the linker bound them")


def conn_libs(evs, libs):
    return {c["conn"]: libs.get(c.get("lib"), {}).get("path", "?")
            for c in evs["conn"] if c.get("phase") == "open"}


def check_records(evs, bindings, a):
    libs = {l["id"]: l for l in evs["lib"]}
    recs = evs["rec"]
    per_conn = collections.Counter(r["conn"] for r in recs)
    clib = conn_libs(evs, libs)
    if a.mode == "native":
        got = {real(libs[r["lib"]]["path"]) for r in recs if r["lib"] in libs}
        # The copies the linker bound the record layer's EVP_CipherUpdate to.
        want = set()
        for (caller, fn), tos in bindings.items():
            if fn == "EVP_CipherUpdate" and "libsysget" not in caller:
                want |= tos
        if a.blind:
            want.discard(real(a.vendor))
        if a.table:  # no relocation to bind: its own EVP code calls its provider directly
            want.add(real(a.vendor))
        if got != want:
            problems.append(f"records decrypted by {sorted(got)}, the linker bound EVP_CipherUpdate to {sorted(want)}")
    else:
        # A copy reached through its provider tables only: its sealing contexts are measured
        # on its own code and not rerouted when the tables cannot give what the backend needs
        # (docs/forwarding.md); the reroute is judged on the records it opens.
        recs = [r for r in recs if not (a.table and r.get("dir") == "out")]
        paths = collections.Counter(r["path"] for r in recs)
        if recs and set(paths) != {a.mode}:
            problems.append(f"record paths {dict(paths)}, want all {a.mode}")
        end = evs["end"][0] if evs["end"] else {}
        if recs and end.get("reroute", {}).get("routed", 0) == 0:
            problems.append("end.reroute.routed is 0")
    if a.visible:
        low = {c: per_conn[c] for c in clib if per_conn[c] < a.min_recs}
        if not clib or low:
            problems.append(f"connections with fewer than {a.min_recs} records: {low or 'no connections'}")
    for c, p in clib.items():
        print(f"ok conn {c} ({os.path.basename(p)}): {per_conn[c]} records")


def check_table(evs, a):
    v = [l for l in evs["lib"] if real(l["path"]) == real(a.vendor) and l.get("role", "app") == "app"]
    if not v or "table" not in v[0].get("reach", "").split("+"):
        problems.append(f"vendor lib event {v[0] if v else None}: want reach table")
        return
    ids = {l["id"] for l in v}
    recs = [r for r in evs["rec"] if r.get("type") == 23]
    mine = [r for r in recs if r["lib"] in ids] if a.mode == "native" else recs
    if len(mine) < a.min_recs:
        problems.append(f"{len(mine)} application-data records from the vendor copy, want >= {a.min_recs}")
    else:
        print(f"ok table: {len(mine)} records from the vendor copy (reach table)")


def check_blind(evs, a):
    hits = [b for b in evs["blind"] if real(b["path"]) == real(a.vendor)]
    end = evs["end"][0] if evs["end"] else {}
    in_end = [b for b in end.get("blind", []) if real(b["path"]) == real(a.vendor)]
    if a.blind:
        if not hits or a.blind not in hits[0]["reasons"] or not in_end:
            problems.append(f"no blind event/end entry for {a.vendor} with reason {a.blind}: {evs['blind']}")
        else:
            print(f"ok blind: {hits[0]['reasons']} ({hits[0]['version']})")
    elif hits:
        problems.append(f"vendor reported blind in a visible layout: {hits[0]['reasons']}")


def check_soft(evs, a):
    libs = [l for l in evs["lib"] if l.get("role", "app") == "app"]
    v = [l for l in libs if real(l["path"]) == real(a.vendor)]
    s = [l for l in libs if "libcrypto.so.3" in l["path"]]
    if a.table:  # no caps (nothing exported to ask): the code its records ran
        impls = {i["id"]: i for i in evs["impl"]}
        ids = {l["id"] for l in v}
        aes = {impls.get(r.get("impl"), {}).get("aes") for r in evs["rec"] if r["lib"] in ids}
        if aes != {"table"}:
            problems.append(f"vendor records ran AES {aes}, want table")
    elif not v or v[0]["caps"].get("aesni") is not False:
        problems.append(f"vendor lib caps {v[0]['caps'] if v else None}, want aesni false")
    if s and s[0]["caps"].get("aesni") is not True:  # the system copy, when in use
        problems.append(f"system lib caps {s[0]['caps'] if s else None}, want aesni true")
    if not problems:
        print("ok caps: vendor copy software (aesni off), system copy aesni on")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--bindings", nargs="+", default=[])
    ap.add_argument("--vendor")
    ap.add_argument("--visible", action="store_true")
    ap.add_argument("--blind")
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--mode", default="native")
    ap.add_argument("--soft-vendor", action="store_true")
    ap.add_argument("--min-recs", type=int, default=100)
    a = ap.parse_args()
    evs = load_trace(a.trace)
    if not evs["header"] or not evs["end"]:
        problems.append("trace has no header or no end line")
    else:
        b = load_bindings(a.bindings)
        check_fwd(evs, b)
        check_records(evs, b, a)
        check_blind(evs, a)
        if a.table:
            check_table(evs, a)
        if a.soft_vendor and (a.mode == "native" or not a.table):
            check_soft(evs, a)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
