#!/usr/bin/env bash
# trace-format2: trace format 2 (binary, the default) against format 1 (JSON Lines). (a) A
# download writes a format-2 file (magic, 0600) that tracecheck.py accepts through
# tlsmeter-analyze --jsonl, and the analyzer's --json of the file equals its --json of the
# file's --jsonl form: the round trip loses nothing. (b) The same download traced with
# TLSMETER_FORMAT=jsonl reads as the same traffic (bytes, records, connections, cipher),
# in fewer trace bytes per event in format 2. (c) Four threads: after the exit squeeze no
# chunk keeps more unused space than a 16th of it, and per-thread counts match mtclient's
# report. (d) Default names: tlsmeter.PID.trace, and .jsonl with TLSMETER_FORMAT=jsonl.
# (e) fork: parent's and child's traces read back whole, end line (a chunk of its own) last.
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload trace-format2
A=$O/tlsmeter-analyze
analyze() { run_target "$A" "$@"; }
is_fmt2() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89544c534d54520a ]; }

tls_make_file f.bin $((3 * 1024 * 1024 + 123))
tls_make_file g.bin 700001
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "trace-format2: openssl s_server did not start"
    exit 0
fi

# (a) format 2 as written, and its round trip.
TLS_KEEP_FORMAT=1
tls_client tlsget "$TLS_PORT" f.bin "$d/b" "$d/b.%p.trace"
tls_traces "$d/b.*.trace"
f=${TRACES[0]:-}
if [ "${#TRACES[@]}" != 1 ] || ! is_fmt2 "$f"; then
    fail "trace-format2 binary: want one format-2 trace, found ${#TRACES[@]}: $(head -c 200 "$d/b.err")"
    exit 0
fi
pass "trace-format2 binary: the default writes format 2 ($(tls_size "$f") bytes)"
tls_trace_check "trace-format2 binary: tracecheck through --jsonl" "$f" \
    --body $((3 * 1024 * 1024 + 123)) --full-read --conns 1 --no-plaintext "$TLS_WWW/f.bin"
analyze --jsonl "$f" >"$d/b.jsonl" 2>"$d/b.jsonl.err"
analyze --json "$f" >"$d/b.json" 2>/dev/null
analyze --json "$d/b.jsonl" >"$d/b2.json" 2>/dev/null
check "trace-format2 round trip: --json of the trace equals --json of its --jsonl form" \
    "$TLSM_PY" - "$d/b.json" "$d/b2.json" "$f" "$d/b.jsonl" <<'PY'
import json, sys
# The file name (a key of its own, and in verdict texts) is the one difference allowed.
a, b = (json.loads(open(p).read().replace(name, "FILE"))
        for p, name in ((sys.argv[1], sys.argv[3]), (sys.argv[2], sys.argv[4])))
assert a == b, "differ: %s" % [k for k in a if a.get(k) != b.get(k)][:8]
assert a["records"] > 100, a["records"]
PY

# (b) the same download in format 1.
TLS_ENV=(TLSMETER_FORMAT=jsonl)
tls_client tlsget "$TLS_PORT" f.bin "$d/j" "$d/j.%p.trace"
TLS_ENV=()
tls_traces "$d/j.*.trace"
j=${TRACES[0]:-}
if [ -z "$j" ] || is_fmt2 "$j"; then
    fail "trace-format2 jsonl: TLSMETER_FORMAT=jsonl did not write JSON Lines"
else
    analyze --json "$j" >"$d/j.json" 2>/dev/null
    check "trace-format2 formats agree: same bytes, records, connections and cipher, format 2 smaller" \
        "$TLSM_PY" - "$d/b.json" "$d/j.json" "$d/b.jsonl" "$f" "$j" <<'PY'
import json, os, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for k in ("bytes_read", "records_app", "records_tag_failed"):
    assert a[k] == b[k], (k, a[k], b[k])
ev = [json.loads(l) for l in open(sys.argv[3])]
assert ev[0]["ev"] == "header" and ev[0]["format"] == 1, ev[0].get("format")
assert ev[-1]["ev"] == "end", ev[-1]["ev"]
cip = {e["cipher"] for e in ev if e["ev"] == "rec"}
assert cip == {"AES-128-GCM"}, cip
conns = [e for e in ev if e["ev"] == "conn" and e.get("phase") == "open"]
assert len(conns) == 1, len(conns)
n2, n1 = os.path.getsize(sys.argv[4]), os.path.getsize(sys.argv[5])
assert n2 * 2 < n1, "format 2 %d bytes, format 1 %d" % (n2, n1)
print("format 2: %d bytes, format 1: %d bytes, %d events" % (n2, n1, len(ev)))
PY
fi

# (c) four threads, three connections each: the squeeze leaves no large unused chunk end.
tls_run "$d/mt" "$d/mt.%p.trace" "$TLSM_PROGS/mtclient" -p "$TLS_PORT" -c "$TLS_CERT" -t 4 -n 3 \
    /f.bin /g.bin
tls_traces "$d/mt.*.trace"
if [ "$(cat "$d/mt.rc")" != 0 ] || [ "${#TRACES[@]}" != 1 ]; then
    fail "trace-format2 threads: mtclient exit $(cat "$d/mt.rc"), ${#TRACES[@]} traces"
else
    check "trace-format2 threads: chunks squeezed at exit (unused <= 1/16 of each)" \
        "$TLSM_PY" - "${TRACES[0]}" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89TLSMTR\n", data[:8]
off, chunks, waste = 16, 0, 0
while off < len(data):
    magic, size, used, tid = struct.unpack_from("<4sIII", data, off)
    assert magic == b"TMCK", "offset %d: %r" % (off, magic)
    assert size % 8 == 0 and 16 + used <= size, (off, size, used)
    assert size - 16 - used <= max(size // 16, 7), "chunk at %d: %d of %d unused" % (off, size - 16 - used, size)
    chunks += 1
    waste += size - 16 - used
    off += size
assert off == len(data), (off, len(data))
print("%d chunks, %d bytes unused of %d" % (chunks, waste, len(data)))
PY
    tls_trace_check "trace-format2 threads: tracecheck, per-thread counts as mtclient saw them" \
        "${TRACES[0]}" --mt-report "$d/mt.out" --conns 12
fi
TLS_KEEP_FORMAT=

# (d) default names, in a fresh working directory per format.
for fmt in binary jsonl; do
    mkdir -p "$d/cwd-$fmt"
    (cd "$d/cwd-$fmt" && target_cmd LD_PRELOAD="$TLSM_PRELOAD" TLSMETER_FORMAT=$fmt \
        "$TLSM_PROGS/mtclient" -q -p "$TLS_PORT" -c "$TLS_CERT" -t 1 -n 1 /g.bin &&
        timeout -k 5 30 "${TARGET_CMD[@]}" >/dev/null 2>&1)
done
n2=$(ls "$d/cwd-binary") n1=$(ls "$d/cwd-jsonl")
if [[ $n2 =~ ^tlsmeter\.[0-9]+\.trace$ ]] && is_fmt2 "$d/cwd-binary/$n2" &&
    [[ $n1 =~ ^tlsmeter\.[0-9]+\.jsonl$ ]] && [ "$(head -c 1 "$d/cwd-jsonl/$n1")" = "{" ]; then
    pass "trace-format2 default names: $n2 (format 2), $n1 (TLSMETER_FORMAT=jsonl)"
else
    fail "trace-format2 default names: got '$n2' and '$n1'"
fi

# (e) fork: parent and child traces (the child's made at the fork) both read whole, each
# with its end line (a chunk of its own) counting every event before it.
TLS_KEEP_FORMAT=1
tls_run "$d/fk" "$d/fk.trace" "$TLSM_PROGS/forkclient" "$TLS_PORT" "$TLS_CERT" /g.bin
TLS_KEEP_FORMAT=
tls_traces "$d/fk.trace*"
if [ "$(cat "$d/fk.rc")" != 0 ] || [ "${#TRACES[@]}" != 2 ]; then
    fail "trace-format2 fork: forkclient exit $(cat "$d/fk.rc"), traces: ${TRACES[*]}"
else
    for t in "${TRACES[@]}"; do
        analyze --jsonl "$t" >"$t.as-jsonl" 2>/dev/null
    done
    check "trace-format2 fork: parent and child traces read whole, end counts every event" \
        "$TLSM_PY" - "${TRACES[@]/%/.as-jsonl}" <<'PY'
import json, sys
for p in sys.argv[1:]:
    ev = [json.loads(l) for l in open(p)]
    assert ev[0]["ev"] == "header" and ev[-1]["ev"] == "end", (p, ev[0]["ev"], ev[-1]["ev"])
    assert ev[-1]["events"] == len(ev) - 1, (p, ev[-1]["events"], len(ev) - 1)
    assert any(e["ev"] == "rec" for e in ev), p
PY
fi
tls_server_stop
