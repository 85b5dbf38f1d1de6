#!/usr/bin/env bash
# analyze-jsonl-fast: the JSON Lines fast paths (input/shape.c: lines repeating a shape seen
# before; input/scan.c: the member scanner) read every line as jansson does. The same events
# and the same odd lines (a real, a leading zero, 7 to 19 digits, -0, a bare '-', another
# string, trailing bytes, a duplicate key, a NUL, a cut literal), each right after the line it
# was made from (so its shape is the one tried first), are read once from compact lines (fast
# paths) and once with an escape in every line's kind (jansson only: no line reaches a fast
# path or teaches it a shape); report, --json and the warnings (but jansson's columns) must be
# the same bytes. Also under qemu (integers are read as 8-byte words on little-endian hosts).
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
d=$(case_dir)
A=$O/tlsmeter-analyze
g=$TLSM_TOP/tests/golden
if [ ! -x "$A" ]; then
    fail "analyze-jsonl-fast: $A is not built"
    exit 0
fi
if under_qemu; then
    target_wrapper "$A" "$d/analyze"
    A=$d/analyze
fi
mkdir -p "$d/fast" "$d/slow"
python3 - "$g/real-soft.jsonl" "$g/soft-table.jsonl" "$d/fast/t.jsonl" "$d/slow/t.jsonl" <<'PY'
import re, sys
src, src2, fast, slow = sys.argv[1:]
lines = open(src, "rb").read().split(b"\n")
lines = [l for l in lines if l] + [l for l in open(src2, "rb").read().split(b"\n")[1:] if l]

def swap(l, key, new):
    """l with the value of integer key replaced by the bytes new (None: key absent)."""
    m = re.search(rb'"' + key + rb'":(-?[0-9]+)', l)
    return l[:m.start(1)] + new + l[m.end(1):] if m else None

def odd(l):
    out = []
    for key in (b"len", b"pt", b"got", b"crypto_ns", b"t"):
        for new in (b"1.5", b"016401", b"1e3", b"12345678", b"1234567", b"123456789", b"-0", b"-",
                    b"", b"123456789012345678", b"1234567890123456789", b"-9223372036854775808",
                    b"99999999999999999999", b"7 ", b" 7", b"123456789012345", b"1234567890123456",
                    b"10000000", b"100000000000000", b"0123456789012", b"-12345678901234"):
            v = swap(l, key, new)
            if v is not None:
                out.append(v)
    out += [l + b" x", l + b"  \t", l[:-1] + b',"len":5}', l[:-1] + b',"zz":-12}',
            l.replace(b'"in"', b'"out"'), l.replace(b'"SSL_read', b'"SSL_peek'),
            l.replace(b"true", b"false"), l.replace(b"true", b"tru"), l.replace(b"AES", b"A\0S"),
            l.replace(b'"t":', b'"t" :'), l[:len(l) // 2], l.replace(b",", b",,", 1), l + b"}",
            l + b" }", l + b"{}", l[:-1] + b" }", l[:-1], l.replace(b":", b":\t", 2)]
    return [o for o in out if o != l]

def escaped(l):
    # An escape in the kind's name: the scanner declines the line, jansson reads the same kind.
    return re.sub(rb'^\{"ev":"(.)', lambda m: b'{"ev":"\\u%04x' % m.group(1)[0], l)

f, s = [lines[0]], [lines[0]]
for i, l in enumerate(lines[1:]):
    f.append(l)
    s.append(escaped(l))
    if i % 7 == 3 and re.match(rb'\{"ev":"(rec|read|write|conn)"', l):
        for o in odd(l):
            f += [o, l]
            s += [escaped(o), escaped(l)]
open(fast, "wb").write(b"\n".join(f) + b"\n")
open(slow, "wb").write(b"\n".join(s) + b"\n")
PY
for mode in "" --json; do
    # shellcheck disable=SC2086
    (cd "$d/fast" && "$A" $mode t.jsonl >out 2>err)
    # shellcheck disable=SC2086
    (cd "$d/slow" && "$A" $mode t.jsonl >out 2>err)
    # jansson's columns in the escaped lines are 5 further on.
    sed -i 's/ (column [0-9]*)$//' "$d/fast/err" "$d/slow/err"
    if [ -s "$d/fast/out" ] && grep -q "skipped" "$d/fast/err" &&
        cmp -s "$d/fast/out" "$d/slow/out" && cmp -s "$d/fast/err" "$d/slow/err"; then
        pass "analyze-jsonl-fast ${mode:-report}: fast paths and jansson agree"
    else
        fail "analyze-jsonl-fast ${mode:-report}: $(diff "$d/fast/out" "$d/slow/out" | head -c 300)" \
            "$(diff "$d/fast/err" "$d/slow/err" | head -c 300)"
    fi
done
# The odd lines did reach the fast paths' decisions: some were skipped, most were read.
(cd "$d/fast" && "$A" --json -q t.jsonl) >"$d/fast.json"
if python3 - "$d/fast.json" <<'PY'; then
import json, sys
t = json.load(open(sys.argv[1]))
assert t["lines_skipped"] > 20, t["lines_skipped"]
assert t["lines"] > 2 * t["lines_skipped"], (t["lines"], t["lines_skipped"])
PY
    pass "analyze-jsonl-fast odd lines skipped and read"
else
    fail "analyze-jsonl-fast: odd lines not as expected: $(head -c 300 "$d/fast.json")"
fi
rm -rf "$d"
