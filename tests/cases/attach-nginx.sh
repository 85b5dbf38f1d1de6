#!/usr/bin/env bash
# attach-nginx: `tlsmeter attach` on nginx's worker under a bounded load of HTTPS requests (a
# Python client on loopback: one new connection per 64 KiB download, at most 240 s). The worker
# is attached for 10 s, detached, attached again for 3 s: no request may fail, and each
# window's trace must hold the connections and response bytes of the requests served inside
# it (at least those wholly inside, at most those that overlap it). Then 100 attach/detach
# cycles in a row on the same busy worker: no request fails, the worker lives on with the same
# descriptors, and its memory growth is stated. nginx's own error log (level info) is the
# witness that no stop made its epoll_wait fail with EINTR.
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
A=$O/tlsmeter-attach
if [ -n "${TLSM_SAN:-}" ]; then
    skip "attach-nginx: a sanitizer build of the library cannot be loaded into nginx"
    exit 0
fi
tls_need_nginx attach-nginx || exit 0
tls_make_file f64k.bin 65536
port=$(tls_free_port)
tls_nginx_conf "$d" ngx "$port" 1 "location / { root $TLS_WWW; }" "sendfile off;"
nginx -e "$d/ngx.error.log" -p "$d" -c "$d/ngx.conf" >"$d/ngx.out" 2>"$d/ngx.err" &
master=$!
TLS_PIDS+=("$master")
worker=
for _ in $(seq 100); do
    worker=$(pgrep -P "$master" | head -n 1)
    [ -n "$worker" ] && curl -sk -o /dev/null "https://127.0.0.1:$port/f64k.bin" && break
    sleep 0.1
done
if [ -z "$worker" ]; then
    fail "attach-nginx: nginx did not start: $(head -c 300 "$d/ngx.err")"
    exit 0
fi
mkdir -p "$d/tr" && chmod 1777 "$d/tr" # the worker (nobody) creates the traces

# The load: requests one after another, each logged "start_ns end_ns ok|fail" (wall clock).
"$TLSM_PY" - "$port" "$d/load.log" "$d/load.stop" >"$d/load.out" 2>&1 <<'PY' &
import os, socket, ssl, sys, time
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
end = time.monotonic() + 240
with open(sys.argv[2], "w") as log:
    while not os.path.exists(sys.argv[3]) and time.monotonic() < end:
        t0, ok = time.time_ns(), False
        try:
            s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10))
            s.sendall(b"GET /f64k.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                b = s.recv(65536)
                if not b:
                    break
                data += b
            s.close()
            ok = data.startswith(b"HTTP/1.1 200") and len(data.split(b"\r\n\r\n", 1)[1]) == 65536
        except OSError:
            pass
        log.write(f"{t0} {time.time_ns()} {'ok' if ok else 'fail'}\n")
        log.flush()
PY
load=$!
TLS_PIDS+=("$load")
sleep 1

# window NAME SECONDS: attach to the worker, detach after SECONDS; sets T0..T3 (ns).
window() {
    local name=$1 apid
    T0=$(date +%s%N)
    "$A" -o "$d/tr/$name.%p.trace" "$worker" 2>"$d/$name.err" &
    apid=$!
    TLS_PIDS+=("$apid")
    tls_wait_log "$d/$name.err" "attached to" "$apid" || fail "attach-nginx $name: no attach: $(head -c 300 "$d/$name.err")"
    T1=$(date +%s%N)
    sleep "$2"
    T2=$(date +%s%N)
    kill -INT "$apid"
    wait "$apid"
    T3=$(date +%s%N)
    grep -q "detached from $worker" "$d/$name.err" || fail "attach-nginx $name: no detach: $(tr '\n' ' ' <"$d/$name.err")"
}

# judge NAME: the window's trace against the requests the load logged.
judge() {
    local name=$1 t out
    t=$(ls "$d/tr/$name".*.trace 2>/dev/null | head -n 1)
    [ -n "$t" ] || { fail "attach-nginx $name: no trace"; return; }
    tlsm_jsonl "$t"
    if out=$(python3 - "$t" "$d/load.log" "$T0" "$T1" "$T2" "$T3" <<'PY'
import json, sys
t0, t1, t2, t3 = (int(x) for x in sys.argv[3:7])
inside = overlap = 0
for line in open(sys.argv[2]):
    s, e, _ = line.split()
    s, e = int(s), int(e)
    inside += s > t1 and e < t2
    overlap += e > t0 and s < t3
opened, wbytes, wrecs, attached = 0, 0, 0, False
for line in open(sys.argv[1]):
    e = json.loads(line)
    ev = e.get("ev")
    attached |= ev == "header" and bool(e.get("attached"))
    if ev == "conn" and e.get("phase") == "open" and not e.get("joined"):
        opened += 1
    elif ev == "write" and e.get("written", 0) > 0:
        wbytes += e["written"]
    elif ev == "rec" and e.get("dir") == "out" and e.get("type") == 23:
        wrecs += 1
print(f"requests inside {inside}, overlapping {overlap}; trace: {opened} connections, "
      f"{wbytes} B written in {wrecs} records")
ok = attached and inside <= opened <= overlap and inside * 65536 <= wbytes <= overlap * 66560 \
    and wrecs >= inside * 4
sys.exit(0 if ok and inside > 0 else 1)
PY
    ); then
        pass "attach-nginx $name: $out"
    else
        fail "attach-nginx $name: $out"
    fi
}

# The worker's descriptors that are not sockets (connections come and go under the load).
files() {
    for f in /proc/"$1"/fd/*; do
        readlink "$f"
    done | grep -v '^socket:' | sort | tr '\n' ' '
}
fd0=$(files "$worker")
window w1 10
judge w1
window w2 3
judge w2
grep -ho 'stopped for [0-9.]* ms' "$d"/w1.err "$d"/w2.err | tr '\n' ' ' >"$d/stops"

# 100 cycles on the busy worker.
rss0=$(awk '/^VmRSS/ {print $2}' "/proc/$worker/status")
bad=0
for i in $(seq 100); do
    "$A" --set "TLSMETER_OUT=$d/tr/c$i.trace" --for 0.02 "$worker" 2>>"$d/cycles.err" || bad=$((bad + 1))
done
rss1=$(awk '/^VmRSS/ {print $2}' "/proc/$worker/status")
fd1=$(files "$worker")
stops=$(grep -o 'stopped for [0-9.]* ms' "$d/cycles.err" | awk '{print $3}' | sort -n |
    awk '{v[NR] = $1} END {printf "median %s ms, max %s ms over %d stops", v[int((NR + 1) / 2)], v[NR], NR}')
touch "$d/load.stop"
wait "$load"
nfail=$(grep -c ' fail$' "$d/load.log")
nreq=$(wc -l <"$d/load.log")
check "attach-nginx: 100 attach/detach cycles all succeeded ($bad failed)" test "$bad" = 0
check "attach-nginx: the worker lives on with the same descriptors besides its connections ($fd1)" \
    test "$(pgrep -P "$master" | head -n 1):$fd1" = "$worker:$fd0"
check "attach-nginx: memory growth over 100 cycles bounded (RSS $rss0 -> $rss1 KiB, limit +16384)" \
    test $((rss1 - rss0)) -lt 16384
# nginx logs an EINTR from epoll_wait at level info ("epoll_wait() failed (4: Interrupted
# system call)"): the stops must not have caused one (tlsmeter-attach rewinds the call).
check "attach-nginx: nginx saw no EINTR from epoll_wait across the 204 stops" \
    sh -c "! grep -q 'Interrupted system call' '$d/ngx.error.log'"
check "attach-nginx: $nreq requests, none failed (windows stopped the worker: $(cat "$d/stops"); cycles: $stops)" \
    test "$nfail:$((nreq > 100))" = "0:1"
