#!/usr/bin/env python3
"""kernelcheck.py: the impl events of one copy, checked against the copy's own code
(tests/cases/trixie-impl.sh).

  kernelcheck.py impl TRACE LIBSUFFIX AES GHASH
      the decrypted records of the copy whose lib path ends with LIBSUFFIX all name one impl
      event, whose aes/ghash are AES/GHASH; prints that event as JSON.
  kernelcheck.py unread TRACE LIBSUFFIX MINRECS
      the copy's lib event says gcm_layout "unverified", at least MINRECS of its records were
      measured (crypto ns > 0), and none names an impl event.
  kernelcheck.py evex SO OFF SIZE [OBJDUMP]
      objdump of the function at OFF (SIZE bytes) of SO: some function it calls directly
      holds vaesenc and vpclmulqdq on zmm registers (its first 16 KiB are read: the object
      may be stripped, so callees have no bounds).
  kernelcheck.py nosimd SO OFF SIZE [OBJDUMP]
      the function at OFF holds no AES, carry-less multiply or byte-shuffle instruction.
  kernelcheck.py sym DBG OFF NAME...
      OFF is the address of one of NAME in DBG's .symtab (nm).
Exit 0 when all hold, else a reason on stdout and exit 1.
"""
import json
import re
import subprocess
import sys

from implcheck import events  # the same JSON Lines reader (this folder is on sys.path)


def copy_of(evs, suffix):
    libs = [e for e in evs if e.get("ev") == "lib" and e.get("path", "").endswith(suffix)]
    if not libs:
        raise SystemExit("no lib event for *%s" % suffix)
    return libs[0]


def recs_of(evs, lib):
    return [e for e in evs if e.get("ev") == "rec" and e.get("lib") == lib["id"]
            and e.get("dir", "in") == "in" and e.get("type") == 23]


def impl(trace, suffix, aes, ghash):
    evs = list(events(trace))
    lib = copy_of(evs, suffix)
    recs = recs_of(evs, lib)
    if not recs:
        return "no application-data records of %s" % suffix
    ids = {r.get("impl") for r in recs}
    if len(ids) != 1 or None in ids or 0 in ids:
        return "%d records of %s name impl ids %s" % (len(recs), suffix, sorted(map(str, ids)))
    ev = [e for e in evs if e.get("ev") == "impl" and e.get("id") in ids]
    if not ev:
        return "impl event %s missing" % ids
    e = ev[0]
    if (e.get("aes"), e.get("ghash")) != (aes, ghash):
        return "impl %s/%s, want %s/%s: %s" % (e.get("aes"), e.get("ghash"), aes, ghash, e)
    if e.get("layout") != "3.5" or lib.get("gcm_layout") != "3.5":
        return "layout %s, lib gcm_layout %s, want 3.5" % (e.get("layout"), lib.get("gcm_layout"))
    print(json.dumps(e))
    return None


def unread(trace, suffix, minrecs):
    evs = list(events(trace))
    lib = copy_of(evs, suffix)
    if lib.get("gcm_layout") != "unverified":
        return "lib gcm_layout %s, want unverified (version %s)" % (lib.get("gcm_layout"), lib.get("version"))
    recs = recs_of(evs, lib)
    timed = [r for r in recs if r.get("crypto_ns", 0) > 0]
    if len(timed) < int(minrecs):
        return "%d measured records of %s, want >= %s" % (len(timed), suffix, minrecs)
    named = [r for r in recs if r.get("impl")]
    if named:
        return "%d records of an unverified copy name impl %s" % (len(named), named[0].get("impl"))
    print("%d records measured, none named, version %s" % (len(timed), lib.get("version")))
    return None


def disasm(so, start, size, objdump):
    out = subprocess.run([objdump, "-d", "--no-show-raw-insn", "--start-address=%#x" % start,
                          "--stop-address=%#x" % (start + size), so],
                         capture_output=True, text=True).stdout
    return [l for l in out.splitlines() if re.match(r"\s+[0-9a-f]+:\t", l)]


def evex(so, off, size, objdump="objdump"):
    off, size = int(off, 0), int(size, 0)
    calls = set()
    for l in disasm(so, off, size, objdump):
        m = re.search(r"\tcall\s+([0-9a-f]+)\b", l)
        if m:
            calls.add(int(m.group(1), 16))
    if not calls:
        return "no direct call in %#x+%d of %s" % (off, size, so)
    for c in sorted(calls):
        body = disasm(so, c, 16384, objdump)
        aes = any(re.search(r"\tvaes(enc|dec)\S*\s.*%zmm", l) for l in body)
        clmul = any(re.search(r"\tvpclmul\S*\s.*%zmm", l) for l in body)
        if aes and clmul:
            print("callee %#x of %#x: zmm vaesenc and vpclmulqdq" % (c, off))
            return None
    return "no callee of %#x (%s) holds zmm vaesenc + vpclmulqdq" % (off, [hex(c) for c in sorted(calls)])


def nosimd(so, off, size, objdump="objdump"):
    off, size = int(off, 0), int(size, 0)
    body = disasm(so, off, size, objdump)
    bad = [l for l in body if re.search(r"\t(v?aes\w*|v?pclmul\w*|v?pshufb)\s", l)]
    if not body:
        return "nothing disassembled at %#x" % off
    if bad:
        return "%#x holds %s" % (off, bad[0].strip())
    print("%#x: %d instructions, no AES/CLMUL/PSHUFB" % (off, len(body)))
    return None


def sym(dbg, off, *names):
    off = int(off, 0)
    out = subprocess.run(["nm", dbg], capture_output=True, text=True).stdout
    at = {f[2] for f in (l.split() for l in out.splitlines()) if len(f) == 3 and int(f[0], 16) == off}
    if not at & set(names):
        return "%#x is %s in %s, want one of %s" % (off, sorted(at) or "no symbol", dbg, names)
    print("%#x = %s" % (off, sorted(at & set(names))[0]))
    return None


def main(a):
    cmds = {"impl": impl, "unread": unread, "evex": evex, "nosimd": nosimd, "sym": sym}
    if len(a) < 2 or a[0] not in cmds:
        print(__doc__)
        return 2
    why = cmds[a[0]](*a[1:])
    if why:
        print(why)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
