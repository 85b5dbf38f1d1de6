#!/usr/bin/env bash
# hs-many: 1,000 TLS 1.3 connections (full handshakes) in one traced process: memory stays
# flat (the process's anonymous RSS, sampled from /proc while it runs, grows no more between
# connection 200 and connection 1,000 than the untraced run's does, plus 512 KiB), every
# connection gets its open event with handshake parts; and what tracing adds per connection,
# counted in instructions by scripts/bench-handshake (callgrind: deterministic, no timing),
# stays under 3 % of a connection's own instructions.
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload hs-many
N=1000
tls_make_file small.bin 2000
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "hs-many: openssl s_server did not start"
    exit 0
fi

# sample PREFIX [VAR=VAL...]: run mtclient for N connections in the background (env execs it:
# $! is the client itself), sampling "connections-so-far RssAnon-kB" into PREFIX.rss every
# 50 ms until it exits (bounded: 4 min).
sample() {
    local p=$1 pid n rss
    shift
    env "$@" "$TLSM_PROGS/mtclient" -p "$TLS_PORT" -c "$TLS_CERT" -t 1 -n "$N" /small.bin \
        >"$p.out" 2>"$p.err" &
    pid=$!
    TLS_PIDS+=("$pid")
    : >"$p.rss"
    for _ in $(seq 4800); do
        rss=$(awk '/^RssAnon:/ {print $2}' "/proc/$pid/status" 2>/dev/null) || break
        [ -n "$rss" ] || break
        n=$(grep -c '^conn ' "$p.out")
        echo "$n $rss" >>"$p.rss"
        sleep 0.05
    done
    wait "$pid"
    echo "$?" >"$p.rc"
}
sample "$d/plain" -u LD_PRELOAD
sample "$d/traced" LD_PRELOAD="$TLSM_PRELOAD" TLSMETER_OUT="$d/traced.trace.%p.jsonl"
tlsm_jsonl "$d/traced.trace.%p.jsonl" # format 2 on disk; the checks read JSON Lines
tls_server_stop
if [ -n "${TLSM_SAN:-}" ]; then
    # The sanitizer runtime in both runs keeps freed memory in its quarantine (the untraced
    # run's RSS grows by ~290 MB over the 1,000 connections): no flat line to compare.
    skip "hs-many memory: ASan's quarantine grows the RSS of the traced and untraced runs alike"
else check "hs-many: $N connections, memory flat (anonymous RSS growth from connection 200 to $N vs untraced)" \
    "$TLSM_PY" - "$d" "$N" <<'PY'
import glob, json, sys
d, n = sys.argv[1], int(sys.argv[2])
def growth(p):
    assert open(p + ".rc").read().strip() == "0", (p, open(p + ".err").read()[-300:])
    s = [tuple(map(int, l.split())) for l in open(p + ".rss") if l.strip()]
    warm = [r for c, r in s if c >= 200]
    late = [r for c, r in s if c >= n * 9 // 10]
    assert warm and late, ("too few samples", p, len(s))
    return max(late) - warm[0], warm[0]
gp, bp = growth(d + "/plain")
gt, bt = growth(d + "/traced")
open(d + "/rss.txt", "w").write("RssAnon growth 200..%d: untraced %d kB (from %d), traced %d kB (from %d)\n" % (n, gp, bp, gt, bt))
assert gt <= gp + 512, ("traced memory grows", gt, gp)
t = glob.glob(d + "/traced.trace.*.jsonl")[0]
opens = [json.loads(l) for l in open(t) if '"phase":"open"' in l]
assert len(opens) == n and all("hs" in c and c["hs"]["parts"] for c in opens), len(opens)
PY
fi
[ -f "$d/rss.txt" ] && sed 's/^/  /' "$d/rss.txt"

if [ -n "${TLSM_SAN:-}" ]; then
    skip "hs-many instructions: valgrind cannot run a sanitizer build"
elif ! command -v valgrind >/dev/null && ! "$TLSM_TOP/scripts/install-deps" --extra valgrind >/dev/null 2>&1; then
    skip "hs-many instructions: valgrind missing and cannot be installed"
else
    BENCH_HS_FEW=4 BENCH_HS_MANY=20 O=$O "$TLSM_TOP/scripts/bench-handshake" >"$d/bench.out" 2>&1
    echo "$?" >"$d/bench.rc"
    sed 's/^/  /' "$d/bench.out"
    check "hs-many: tracing adds < 3 % instructions per connection (scripts/bench-handshake)" \
        "$TLSM_PY" - "$d" <<'PY'
import re, sys
d = sys.argv[1]
out = open(d + "/bench.out").read()
assert open(d + "/bench.rc").read().strip() == "0", out[-400:]
m = re.search(r"added per connection: (-?\d+) instructions \(([-\d.]+) %", out)
assert m, out[-400:]
assert float(m.group(2)) < 3, ("per-connection cost", m.group(1), m.group(2))
PY
fi
