#!/usr/bin/env python3
"""png_frame.py PNG SVG PREFIX: is the flame graph frame whose name starts with PREFIX drawn in
the screenshot PNG of SVG? Finds the frame's rectangle and fill in the SVG, decodes the PNG with
the standard library only (8-bit RGB/RGBA, not interlaced: what Chromium writes), and counts the
pixels on the frame's middle row that have the frame's colour (text covers some). Prints the
numbers; exit 0 when at least 30 % of that row and 2 % of the whole picture are frame colour."""
import re
import struct
import sys
import zlib


def png_rows(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    assert depth == 8 and ctype in (2, 6) and not interlace, "unsupported PNG %r" % (ihdr,)
    bpp = 3 if ctype == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pr) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows


def frame_rect(svg, prefix):
    for m in re.finditer(r'<g><title>([^<]*)</title><rect x="([\d.]+)" y="([\d.]+)" '
                         r'width="([\d.]+)" height="([\d.]+)" fill="rgb\((\d+),(\d+),(\d+)\)"', svg):
        if m.group(1).startswith(prefix):
            x, y, w, h = (float(v) for v in m.group(2, 3, 4, 5))
            return x, y, w, h, tuple(int(v) for v in m.group(6, 7, 8)), m.group(1)
    return None


def near(p, q):
    return all(abs(a - b) <= 10 for a, b in zip(p, q))


def main():
    png, svg, prefix = sys.argv[1:4]
    r = frame_rect(open(svg).read(), prefix)
    if not r:
        print("no frame named %s... in %s" % (prefix, svg))
        return 1
    x, y, w, h, fill, title = r
    pw, ph, rows = png_rows(png)
    mid = int(y + h / 2)
    xs = range(int(x) + 1, min(int(x + w) - 1, pw))
    row_hits = sum(near(rows[mid][i], fill) for i in xs) if mid < ph else 0
    bg = rows[ph - 1][pw - 1]
    drawn = sum(not near(p, bg) for row in rows for p in row)
    row_share, drawn_share = row_hits / max(len(xs), 1), drawn / (pw * ph)
    print("frame %r at x=%.0f y=%.0f w=%.0f: %.0f %% of its row in rgb%s; %.0f %% of the picture "
          "drawn (%dx%d)" % (title, x, y, w, 100 * row_share, fill, 100 * drawn_share, pw, ph))
    return 0 if row_share >= 0.3 and drawn_share >= 0.02 else 1


if __name__ == "__main__":
    sys.exit(main())
