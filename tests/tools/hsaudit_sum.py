#!/usr/bin/env python3
# hsaudit_sum.py: one tests/tools/hsaudit.c log summarized: inside the program's handshake-driving
# libssl calls, the calls made under them (to DEPTH levels) with count and inclusive CPU time.
# Usage: hsaudit_sum.py LOG [DEPTH]   (times are inflated by the auditing itself: compare
# counts and shapes, not microseconds)
import collections
import re
import sys

TOP = {"SSL_do_handshake", "SSL_connect", "SSL_accept", "SSL_write", "SSL_read",
       "SSL_write_ex", "SSL_read_ex"}
maxdepth = int(sys.argv[2]) if len(sys.argv) > 2 else 2
stack, agg = [], collections.defaultdict(lambda: [0, 0])
for line in open(sys.argv[1], errors="replace"):
    s = line.strip()
    if s.startswith("<"):
        parts = s[1:].rsplit(" ", 1)
        if len(parts) < 2 or not stack:
            continue
        name, rc, t0, path = stack.pop()
        if path is not None:
            agg[path][0] += 1
            agg[path][1] += int(parts[1]) - t0
        continue
    m = re.match(r"(\d+)>(\d+) (\S+) (\d+)", s)
    if not m:
        continue
    rc, _, name, t = m.groups()
    path = None
    if rc == "0" and name in TOP:
        path = (name,)
    elif stack and stack[-1][3] is not None and len(stack[-1][3]) < maxdepth:
        path = stack[-1][3] + (name,)
    stack.append((name, rc, int(t), path))
for p in sorted(agg):
    c, ns = agg[p]
    print("  " * (len(p) - 1) + "%s x%d %.0fus" % (p[-1], c, ns / 1000))
