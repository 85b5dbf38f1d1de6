#!/usr/bin/env bash
# trace-nginx: nginx with `user nobody`, a master and 2 workers, traced (LD_PRELOAD, the trace
# template in a root-owned 0755 directory nobody cannot write). The workers drop privileges
# after fork, so their trace files must be created at the fork; an 8 MiB upload (curl, not
# traced) must then be in one worker's trace as reads totalling >= 8 MiB, and every trace
# must parse. Needs root (to start nginx as root that drops to nobody).
# tlsm-arch: x86_64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload trace-nginx
tls_need_nginx trace-nginx || exit 0

port=$(tls_free_port)
tr=$d/traces
mkdir -p "$tr" "$d/tmp"
chown root:root "$tr" && chmod 0755 "$tr"
tls_nginx_conf "$d" nginx "$port" 2 'location / { return 200 "ok\n"; }'

env LD_PRELOAD="$TLSM_PRELOAD" TLSMETER_OUT="$tr/nginx.%p.jsonl" \
    nginx -e "$d/nginx.error.log" -p "$d" -c "$d/nginx.conf" >"$d/nginx.out" 2>"$d/nginx.err" &
master=$!
TLS_PIDS+=("$master")
up=
for _ in $(seq 100); do # <= 10 s
    if [ -s "$d/nginx.pid" ] && [ "$(pgrep -c -P "$master" 2>/dev/null)" -ge 2 ] &&
        env -u LD_PRELOAD curl -sS -o /dev/null --cacert "$TLS_CERT" "https://127.0.0.1:$port/" 2>/dev/null; then
        up=1
        break
    fi
    kill -0 "$master" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$up" ]; then
    fail "trace-nginx: nginx did not start: $(head -c 300 "$d/nginx.err") $(tail -n 3 "$d/nginx.error.log" 2>/dev/null)"
    exit 0
fi
workers=$(pgrep -P "$master" | tr '\n' ' ')
owner=$(ps -o user= -p "${workers%% *}" | tr -d ' ')

head -c $((8 * 1024 * 1024)) /dev/urandom >"$d/up.bin"
code=$(env -u LD_PRELOAD curl -sS --max-time 60 --cacert "$TLS_CERT" -H 'Expect:' \
    --data-binary @"$d/up.bin" -o "$d/up.out" -w '%{http_code}' "https://127.0.0.1:$port/up")
kill -QUIT "$master" 2>/dev/null
for _ in $(seq 100); do
    kill -0 "$master" 2>/dev/null || break
    sleep 0.1
done
tls_stop_pid "$master"
tlsm_jsonl "$tr/nginx.%p.jsonl" # format 2 as JSON Lines, for the check below

if [ "$code" != 200 ] || [ "$owner" != nobody ]; then
    fail "trace-nginx: upload answered '$code', workers ran as '$owner' (want 200, nobody)"
    exit 0
fi
tls_traces "$tr/nginx.*.jsonl"
check "trace-nginx: an 8 MiB upload is in a worker's trace (workers: $workers; traces: ${#TRACES[@]})" \
    "$TLSM_PY" - "$master" $((8 * 1024 * 1024)) "${TRACES[@]}" <<'PY'
import json, sys
master, want, files = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
best = 0
for f in files:
    ev = [json.loads(l) for l in open(f, "rb").read().split(b"\n") if l.strip()]
    h = ev[0]
    assert h["ev"] == "header", "%s: first line %s" % (f, h["ev"])
    assert ev[-1]["ev"] == "end", "%s: no end line" % f
    if h.get("fork_of") != master:
        continue
    got = sum(e["got"] for e in ev if e["ev"] == "read" and e["got"] > 0)
    best = max(best, got)
assert best >= want, "largest worker trace holds %d bytes of reads, want >= %d" % (best, want)
PY
if [ "${#TRACES[@]}" -ge 1 ] && "$O/tlsmeter-analyze" "${TRACES[@]}" >"$d/report" 2>"$d/aerr"; then
    pass "trace-nginx: the analyzer reads every trace"
else
    fail "trace-nginx: the analyzer: $(head -c 300 "$d/aerr")"
fi
