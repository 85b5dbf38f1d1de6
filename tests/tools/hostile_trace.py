#!/usr/bin/env python3
"""hostile_trace.py KIND OUT [ARGS]: writes a syntactically valid trace built to stress the
analyzer (tests/cases/hostile-analyzer.sh, the fuzz corpus). Kinds:
  conns N          N connections of one record each, no stacks (flame graph: N siblings)
  stacks N MODULE  N distinct 64-frame stacks in MODULE (a real file: symbolization)
  names            frame/exe/cipher names with cut UTF-8, U+FFFE/U+FFFF, C0 controls, markup
  cut-cipher       records whose cipher string is cut inside a UTF-8 character
  int64-end        an end line with user_ns = sys_ns = INT64_MAX
  module-path PATH one stacked record whose module file is PATH (a FIFO, /dev/tty, ...)
  raw-header-byte  a header with a raw \\xff byte in a setting (what older writers wrote)
"""
import json
import random
import sys

HEADER = {"ev": "header", "format": 1, "tool": "tlsmeter", "version": "0.1.0", "pid": 4242,
          "ppid": 1, "exe": "/usr/bin/curl", "comm": "curl",
          "start_unix_ns": 1764489602000000000, "mono_ns": 81234567890, "clock": "tsc",
          "clock_hz": 2899999000, "clock_cost_ns": 7, "arch": "x86_64", "cpu": "test cpu",
          "cpu_crypto": ["aes", "pclmulqdq"], "ncpu": 2, "crypto_mode": "native",
          "config": {"TLSMETER_OUT": "t.%p.jsonl", "TLSMETER_CRYPTO": "native"}}
LIB = {"ev": "lib", "id": 1, "path": "/usr/lib/x86_64-linux-gnu/libcrypto.so.3",
       "has_ssl": True, "has_crypto": True, "version": "OpenSSL 3.0.19", "role": "app"}
END = {"ev": "end", "t": 10 ** 9, "events": 0, "dropped": 0, "user_ns": 1000, "sys_ns": 1000,
       "wall_ns": 10 ** 9, "reroute": {"mode": "native", "routed": 0, "fallback": 0}}


def line(o):
    return json.dumps(o, separators=(",", ":"), ensure_ascii=False) + "\n"


def rec(t, conn, cipher="AES-128-GCM", tid=4242, **kw):
    r = {"ev": "rec", "t": t, "tid": tid, "conn": conn, "dir": "in", "tls": "1.3", "type": 23,
         "len": 16401, "pt": 16384, "cipher": cipher, "crypto_ns": 9000 + conn % 7,
         "path": "native", "lib": 1, "tag_ok": True, "read": 0}
    r.update(kw)
    return r


def conns(out, n):
    out.write(line(HEADER) + line(LIB))
    # One template for the 2 M lines: json.dumps per line would take most of the test's time.
    tmpl = line(rec(0, 0)).replace('"t":0', '"t":%d').replace('"conn":0', '"conn":%d')
    tmpl = tmpl.replace('"crypto_ns":9000', '"crypto_ns":%d')
    for c in range(1, n + 1):
        out.write(tmpl % (1000 + c, c, 9000 + c % 7))
    out.write(line(END))


def stacks(out, n, module):
    out.write(line(HEADER) + line(LIB))
    out.write(line({"ev": "module", "id": 0, "path": module, "base": "0x7f0000000000",
                    "build_id": ""}))
    rnd = random.Random(12)
    for s in range(1, n + 1):
        frames = [[0, hex(rnd.randrange(0x1000, 0x200000))] for _ in range(64)]
        out.write(line({"ev": "stack", "id": s, "frames": frames}))
        out.write(line(rec(1000 + s, 1 + s % 50, stack=s)))
    out.write(line(END))


# Names XML 1.0 forbids or a byte cut would break: a 3-byte character at every cut position,
# U+FFFE, U+FFFF, C0 controls, markup, a non-BMP character, DEL and C1.
HOSTILE = ["\u20ac" * 200, "a\u20ac" * 150, "x\ufffey\uffffz", "c0\x01\x02\x1b[31m\x7f\x85",
           "</text><script>alert(1)</script>&amp;\"'", "\U0001f512" * 80, "\u00fc" * 400]


def names(out):
    h = dict(HEADER, exe="/opt/" + HOSTILE[0], comm=HOSTILE[2])
    out.write(line(h) + line(LIB))
    out.write(line({"ev": "module", "id": 0, "path": "/nonexistent/" + HOSTILE[1],
                    "base": "0x7f0000000000", "build_id": ""}))
    for i, s in enumerate(HOSTILE, 1):
        out.write(line({"ev": "module", "id": i, "path": "/nonexistent/" + s,
                        "base": "0x7f0000000000", "build_id": ""}))
        out.write(line({"ev": "stack", "id": i, "frames": [[i, "0x1234"], [0, "0x99"]]}))
        out.write(line(rec(1000 + i, i, cipher=s[:60], stack=i)))
        out.write(line(rec(2000 + i, 100 + i, cipher=s[:60], path=s)))
    out.write(line(END))


def cut_cipher(out):
    out.write(line(HEADER) + line(LIB))
    # 39 ASCII bytes then a 3-byte character: the 40-byte cut of the slice name splits it.
    for i in range(1, 21):
        out.write(line(rec(1000 * i, 1, cipher="A" * 39 + "\u20acGCM", tid=4242 + i % 2)))
    out.write(line(END))


def int64_end(out):
    out.write(line(HEADER) + line(LIB))
    out.write(line(rec(1000, 1)))
    out.write(line(dict(END, user_ns=2 ** 63 - 1, sys_ns=2 ** 63 - 1)))


def module_path(out, path):
    out.write(line(HEADER) + line(LIB))
    out.write(line({"ev": "module", "id": 0, "path": path, "base": "0x7f0000000000",
                    "build_id": ""}))
    out.write(line({"ev": "stack", "id": 1, "frames": [[0, "0x1234"]]}))
    out.write(line(rec(1000, 1, stack=1)))
    out.write(line(END))


def raw_header_byte(path):
    h = dict(HEADER, config=dict(HEADER["config"], TLSMETER_BACKEND_PROPQ="fips=@no"))
    with open(path, "wb") as out:
        out.write(line(h).replace("fips=@no", "fips=\udcffno").encode("utf-8", "surrogateescape"))
        out.write((line(LIB) + line(rec(1000, 1)) + line(END)).encode())


def main():
    kind, path = sys.argv[1], sys.argv[2]
    if kind == "raw-header-byte":
        return raw_header_byte(path)
    with open(path, "w", encoding="utf-8") as out:
        if kind == "conns":
            conns(out, int(sys.argv[3]))
        elif kind == "stacks":
            stacks(out, int(sys.argv[3]), sys.argv[4])
        elif kind == "names":
            names(out)
        elif kind == "cut-cipher":
            cut_cipher(out)
        elif kind == "int64-end":
            int64_end(out)
        elif kind == "module-path":
            module_path(out, sys.argv[3])
        else:
            sys.exit("hostile_trace.py: unknown kind " + kind)


if __name__ == "__main__":
    main()
