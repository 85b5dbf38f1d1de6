#!/usr/bin/env bash
# trace-death: a client killed mid-download keeps its trace. A Python client records after
# every read how many bytes it has received (a file the test reads after its death); it is
# killed (a) by SIGTERM, which it does not handle, and (b) by SIGKILL, each once it has
# >= 2 MiB, and (c) by SIGKILL right after one short request, all in trace format 2 (its
# chunks read through tlsmeter-analyze --jsonl), and (b) once more in format 1. The trace's
# read events (sum of got) must cover >= 99 % of what the client recorded, the trace must
# parse (format 1: NUL runs of the mapped writer skipped, at most one line per thread cut;
# format 2: no entry torn), and the report must say "cut short" with what it holds, never
# "made no TLS reads".
# On aarch64 it runs in a real arm64 kernel (scripts/arm64vm); under qemu-user it skips.
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload trace-death
if under_qemu; then
    skip "trace-death: needs the host's python and signals to the traced process (not under qemu)"
    exit 0
fi

tls_make_file big.bin $((96 * 1024 * 1024))
tls_make_file small.bin 1500
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "trace-death: openssl s_server did not start"
    exit 0
fi

# The client: GET PATH, after every read the running total into COUNT (fixed width, one
# pwrite: the test reads a whole number), then "done" and a sleep (killed there in (c)).
cat >"$d/client.py" <<'PY'
import os, socket, ssl, sys, time
port, cert, path, count, delay = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])
linger = float(sys.argv[6]) if len(sys.argv) > 6 else 30
ctx = ssl.create_default_context(cafile=cert)
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1")
s.sendall(b"GET /%s HTTP/1.0\r\n\r\n" % path.encode())
fd = os.open(count, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
total = 0
while True:
    b = s.recv(16384)
    if not b:
        break
    total += len(b)
    os.pwrite(fd, b"%20d run \n" % total, 0)
    if delay:
        time.sleep(delay)
os.pwrite(fd, b"%20d done\n" % total, 0)
time.sleep(linger)
PY

# What a trace holds, read the way the format says: NUL runs skipped, a piece before a run
# (or a piece after one that does not parse) is a cut line. Prints "got cut lines" or fails.
cat >"$d/holds.py" <<'PY'
import json, sys
data = open(sys.argv[1], "rb").read()
got = cut = lines = 0
for raw in data.split(b"\n"):
    pieces = [p for p in raw.split(b"\0")]
    for i, p in enumerate(pieces):
        if not p:
            continue
        if i < len(pieces) - 1:      # text before a NUL run: cut
            cut += 1
            continue
        try:
            ev = json.loads(p)
        except ValueError:
            cut += 1
            continue
        lines += 1
        if ev.get("ev") == "read" and ev.get("got", 0) > 0 and not ev["fn"].startswith("SSL_peek"):
            got += ev["got"]
if lines == 0 or not data.startswith(b'{"ev":"header"'):
    sys.exit("no header at the start")
print(got, cut, lines)
PY

# holds FILE: holds.py on the trace's JSON Lines form (format 2: tlsmeter-analyze --jsonl,
# which reads the chunks a killed process left).
holds() {
    if [ "$(head -c 4 "$1" | od -An -tx1 | tr -d ' \n')" = 89544c53 ]; then
        "$O/tlsmeter-analyze" -q --jsonl "$1" >"$1.as-jsonl" || {
            echo "tlsmeter-analyze --jsonl failed"
            return 1
        }
        "$TLSM_PY" "$d/holds.py" "$1.as-jsonl"
    else
        "$TLSM_PY" "$d/holds.py" "$1"
    fi
}

# run_kill NAME PATH DELAY SIGNAL MIN_BYTES [VAR=VALUE...]: start the traced client, wait
# until it has MIN_BYTES (or, MIN_BYTES 0, until it is done), send SIGNAL, then check its
# trace (format 2, the default; TLSMETER_FORMAT=jsonl for format 1's NUL-run layout).
run_kill() {
    local name=$1 path=$2 delay=$3 sig=$4 min=$5 p=$d/$1 pid have=0 f
    shift 5
    rm -f "$p".*
    env LD_PRELOAD="$TLSM_PRELOAD" TLSMETER_OUT="$p.%p.jsonl" "$@" \
        "$TLSM_PY" "$d/client.py" "$TLS_PORT" "$TLS_CERT" "$path" "$p.count" "$delay" \
        >"$p.out" 2>"$p.err" &
    pid=$!
    for _ in $(seq 600); do # <= 30 s
        have=$(awk '{print $1 + 0; exit}' "$p.count" 2>/dev/null)
        if [ "$min" = 0 ]; then
            grep -q done "$p.count" 2>/dev/null && break
        elif [ "${have:-0}" -ge "$min" ]; then
            break
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    kill -"$sig" "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    local rc=$?
    have=$(awk '{print $1 + 0; exit}' "$p.count" 2>/dev/null)
    if [ "$rc" != $((128 + $(kill -l "$sig"))) ]; then
        fail "trace-death $name: the client did not die by SIG$sig (exit $rc): $(head -c 300 "$p.err")"
        return
    fi
    if [ "${have:-0}" -lt "$min" ] || [ "${have:-0}" = 0 ]; then
        fail "trace-death $name: the client had only ${have:-0} bytes when killed (want >= $min)"
        return
    fi
    tls_traces "$p.*.jsonl"
    if [ "${#TRACES[@]}" != 1 ]; then
        fail "trace-death $name: want one trace, found ${#TRACES[@]}"
        return
    fi
    f=${TRACES[0]}
    local h got cut
    if ! h=$(holds "$f" 2>&1); then
        fail "trace-death $name: trace unreadable: $h"
        return
    fi
    read -r got cut _ <<<"$h"
    check "trace-death $name: reads cover >= 99 % of the $have bytes received (trace: $got, $cut cut)" \
        test $((got * 100)) -ge $((have * 99)) -a "$cut" -le 1
    "$O/tlsmeter-analyze" "$f" >"$p.report" 2>"$p.aerr"
    "$O/tlsmeter-analyze" --json "$f" >"$p.json" 2>/dev/null
    if grep -q "cut short" "$p.report" && ! grep -q "made no TLS reads" "$p.report" &&
        "$TLSM_PY" -c 'import json, sys
def find(o):
    if isinstance(o, dict):
        if "bytes_read" in o:
            return o["bytes_read"]
        for v in o.values():
            r = find(v)
            if r is not None:
                return r
sys.exit(0 if find(json.load(open(sys.argv[1]))) == int(sys.argv[2]) else 1)' "$p.json" "$got"; then
        pass "trace-death $name: the report says cut short, with the reads it holds"
    else
        fail "trace-death $name: report: $(grep -E 'truncated|no-events|cut' "$p.report" | head -3) $(head -c 200 "$p.aerr")"
    fi
}

run_kill term big.bin 0.002 TERM $((2 * 1024 * 1024))
run_kill kill big.bin 0.002 KILL $((2 * 1024 * 1024))
run_kill short small.bin 0 KILL 0
run_kill kill-jsonl big.bin 0.002 KILL $((2 * 1024 * 1024)) TLSMETER_FORMAT=jsonl

# (d) write(2) mode (a FIFO cannot be mapped): a normal exit still writes every buffered line
# and the end line; the header says io "write".
mkfifo "$d/fifo"
cat "$d/fifo" >"$d/fifo.jsonl" &
cat_pid=$!
TLS_PIDS+=("$cat_pid")
timeout -k 5 60 env LD_PRELOAD="$TLSM_PRELOAD" TLSMETER_OUT="$d/fifo" \
    "$TLSM_PY" "$d/client.py" "$TLS_PORT" "$TLS_CERT" small.bin "$d/fifo.count" 0 0 \
    >"$d/fifo.out" 2>"$d/fifo.err"
# cat ends at EOF; a writer opened and closed here ends it even if the client never opened
# the FIFO (bounded: the open blocks only if cat is gone already).
timeout 2 sh -c ': >"$1"' sh "$d/fifo" 2>/dev/null
wait "$cat_pid" 2>/dev/null
mv "$d/fifo.jsonl" "$d/fifo.trace"
"$O/tlsmeter-analyze" -q --jsonl "$d/fifo.trace" >"$d/fifo.jsonl"
check "trace-death fifo: write(2) mode keeps every line at exit" "$TLSM_PY" - "$d/fifo.jsonl" \
    "$(awk '{print $1 + 0; exit}' "$d/fifo.count" 2>/dev/null)" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert ev[0]["ev"] == "header" and ev[0]["io"] == "write", ev[0].get("io")
assert ev[-1]["ev"] == "end" and ev[-1]["events"] == len(ev) - 1, "end line"
got = sum(e["got"] for e in ev if e["ev"] == "read" and e["got"] > 0)
assert got == int(sys.argv[2]) > 0, (got, sys.argv[2])
PY
