#!/usr/bin/env bash
# attach-fork: a child forked while tlsmeter is attached keeps nothing of tlsmeter's. A Python
# program downloads slowly; once attached it forks a child that downloads over its own new
# connection and then waits. The child's GOT must be the parent's from before the attach (read
# from outside, tests/tools/gotsnap.py), it must hold no descriptor of the trace and write no
# trace of its own, and both downloads must arrive intact; the parent's trace holds the
# parent's reads only.
# tlsm-arch: x86_64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
A=$O/tlsmeter-attach
if [ -n "${TLSM_SAN:-}" ] || under_qemu || in_userland; then
    skip "attach-fork: needs the host's programs and a library built without sanitizers"
    exit 0
fi
tls_make_file big.bin $((24 * 1024 * 1024))
tls_make_file small.bin $((2 * 1024 * 1024))
big_sha=$(tls_sha "$TLS_WWW/big.bin")
small_sha=$(tls_sha "$TLS_WWW/small.bin")
tls_server_start 1.3 TLS_AES_128_GCM_SHA256 || { fail "attach-fork: no server"; exit 0; }
P1=$TLS_PORT
tls_server_start 1.3 TLS_AES_128_GCM_SHA256 || { fail "attach-fork: no second server"; exit 0; }
P2=$TLS_PORT
mkdir -p "$d/tr"

# The parent forks when the file "go" appears; the child downloads, reports, then waits for
# "end" (so it can be looked at), bounded.
"$TLSM_PY" - "$P1" "$P2" "$d" >"$d/prog.out" 2>"$d/prog.err" <<'PY' &
import hashlib, os, socket, ssl, sys, time
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE

def get(port, path):
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)))
    s.sendall(b"GET /" + path + b" HTTP/1.0\r\n\r\n")
    return s

def sha(data):
    return hashlib.sha256(data.split(b"\r\n\r\n", 1)[1]).hexdigest()

d, child = sys.argv[3], 0
big, data = get(int(sys.argv[1]), b"big.bin"), []
while True:
    b = big.recv(16384)
    if not b:
        break
    data.append(b)
    time.sleep(0.003)
    if not child and os.path.exists(d + "/go"):
        child = os.fork()
        if child == 0:
            s, parts = get(int(sys.argv[2]), b"small.bin"), []
            while True:
                c = s.recv(65536)
                if not c:
                    break
                parts.append(c)
            with open(d + "/child.out", "w") as f:
                f.write(f"child {os.getpid()} {sha(b''.join(parts))}\n")
            for _ in range(600):
                if os.path.exists(d + "/end"):
                    break
                time.sleep(0.05)
            os._exit(0)
print("big", sha(b"".join(data)))
_, st = os.waitpid(child, 0) if child else (0, 0)
print("child_status", st)
PY
pid=$!
TLS_PIDS+=("$pid")
sleep 1
python3 "$TLSM_TOOLS/gotsnap.py" "$pid" >"$d/got0"
"$A" -o "$d/tr/p.%p.trace" "$pid" 2>"$d/attach.err" &
apid=$!
TLS_PIDS+=("$apid")
tls_wait_log "$d/attach.err" "attached to" "$apid" || fail "attach-fork: no attach: $(head -c 300 "$d/attach.err")"
touch "$d/go"
for _ in $(seq 200); do
    [ -s "$d/child.out" ] && break
    sleep 0.05
done
cpid=$(awk '{print $2}' "$d/child.out" 2>/dev/null)
if [ -n "$cpid" ] && [ -d "/proc/$cpid" ]; then
    out=$(python3 "$TLSM_TOOLS/gotsnap.py" --compare "$d/got0" "$cpid" 2>&1)
    check "attach-fork: the child's GOT is the parent's from before the attach ($(echo "$out" | tail -n 1))" \
        sh -c "echo '$out' | tail -n 1 | grep -q 'changed 0$'"
    trace_fds=$(for f in /proc/"$cpid"/fd/*; do readlink "$f"; done | grep -c "$d/tr/")
    check "attach-fork: the child holds no descriptor of the trace" test "$trace_fds" = 0
    check "attach-fork: the child's download is intact" grep -q "$small_sha" "$d/child.out"
else
    fail "attach-fork: no child appeared: $(head -c 300 "$d/prog.err")"
fi
touch "$d/end"
kill -INT "$apid"
wait "$apid"
wait "$pid"
rc=$?
check "attach-fork: the parent finished intact (exit 0, child status 0)" \
    test "$rc:$(awk '/^big/ {print $2}' "$d/prog.out"):$(awk '/^child_status/ {print $2}' "$d/prog.out")" = "0:$big_sha:0"
n=$(ls "$d/tr" | wc -l)
check "attach-fork: one trace, the parent's ($(ls "$d/tr" | tr '\n' ' '))" \
    test "$n:$(ls "$d/tr")" = "1:p.$pid.trace"
T=$d/tr/p.$pid.trace
tlsm_jsonl "$T"
check "attach-fork: the parent's trace holds its reads and no other process's" \
    sh -c "grep -q '\"ev\":\"read\"' '$T' && ! grep -q '\"tid\":${cpid}[,}]' '$T'"
