#!/usr/bin/env bash
# attach-reroute: TLSMETER_CRYPTO=hw through `tlsmeter attach`. A Python program downloads one
# large file slowly over a connection opened before the attach, and a small file over a new
# connection every ~0.2 s. While attached, the new connections' records must go to the hw
# backend and the old connection's stay native (its keys were set before the attach, so no
# shadow context can exist), the report must say so, and every body must arrive intact.
# tlsm-arch: x86_64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
A=$O/tlsmeter-attach
if [ -n "${TLSM_SAN:-}" ] || under_qemu || in_userland; then
    skip "attach-reroute: needs the host's programs and a library built without sanitizers"
    exit 0
fi
tls_make_file big.bin $((40 * 1024 * 1024))
tls_make_file small.bin $((1024 * 1024 + 5))
big_sha=$(tls_sha "$TLS_WWW/big.bin")
small_sha=$(tls_sha "$TLS_WWW/small.bin")
tls_server_start 1.3 TLS_AES_256_GCM_SHA384 || { fail "attach-reroute: no server"; exit 0; }
P1=$TLS_PORT
tls_server_start 1.3 TLS_AES_256_GCM_SHA384 || { fail "attach-reroute: no second server"; exit 0; }
P2=$TLS_PORT

"$TLSM_PY" - "$P1" "$P2" "$d/prog.log" >"$d/prog.out" 2>"$d/prog.err" <<'PY' &
import hashlib, socket, ssl, sys, time
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE

def get(port, path):
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)))
    s.sendall(b"GET /" + path + b" HTTP/1.0\r\n\r\n")
    return s

def body_sha(data):
    return hashlib.sha256(data.split(b"\r\n\r\n", 1)[1]).hexdigest()

big, data, last, n = get(int(sys.argv[1]), b"big.bin"), [], time.monotonic(), 0
with open(sys.argv[3], "w") as log:
    while True:
        b = big.recv(16384)
        if not b:
            break
        data.append(b)
        log.write(f"big {sum(map(len, data))}\n")
        time.sleep(0.002)
        if time.monotonic() - last > 0.2:
            last, n = time.monotonic(), n + 1
            s, parts = get(int(sys.argv[2]), b"small.bin"), []
            while True:
                c = s.recv(65536)
                if not c:
                    break
                parts.append(c)
            s.close()
            log.write(f"small {n} {body_sha(b''.join(parts))}\n")
        log.flush()
print("big", body_sha(b"".join(data)), "small", n)
PY
pid=$!
TLS_PIDS+=("$pid")
smalls() {
    local n
    n=$(grep -c '^small' "$d/prog.log" 2>/dev/null)
    echo "${n:-0}"
}
for _ in $(seq 200); do
    [ "$(smalls)" -ge 2 ] && break
    sleep 0.05
done
TLSMETER_CRYPTO=hw "$A" -o "$d/rr.%p.trace" "$pid" 2>"$d/attach.err" &
apid=$!
TLS_PIDS+=("$apid")
tls_wait_log "$d/attach.err" "attached to" "$apid" || fail "attach-reroute: no attach: $(head -c 300 "$d/attach.err")"
n0=$(smalls)
for _ in $(seq 200); do
    [ "$(smalls)" -ge $((n0 + 4)) ] && break
    sleep 0.05
done
kill -INT "$apid"
wait "$apid"
wait "$pid"
rc=$?
check "attach-reroute: exit code 0 and the large body intact" \
    test "$rc:$(awk '{print $2}' "$d/prog.out")" = "0:$big_sha"
nbad=$(grep '^small' "$d/prog.log" | grep -vc "$small_sha")
check "attach-reroute: every small body intact ($(grep -c '^small' "$d/prog.log") downloads)" test "$nbad" = 0
T=$(ls "$d"/rr.*.trace | head -n 1)
tlsm_jsonl "$T"
out=$(python3 - "$T" <<'PY'
import json, sys
conns, recs = {}, {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("ev") == "conn" and e.get("phase") == "open":
        conns[e["conn"]] = bool(e.get("joined"))
    elif e.get("ev") == "rec" and e.get("dir") == "in" and e.get("type") == 23:
        recs.setdefault(e.get("conn"), []).append(e.get("path"))
old = [p for c, ps in recs.items() if conns.get(c) for p in ps]
new = [p for c, ps in recs.items() if c in conns and not conns[c] for p in ps]
print(f"joined={sum(conns.values())} new_conns={sum(not j for j in conns.values())} "
      f"old_records={len(old)} old_native={old.count('native')} "
      f"new_records={len(new)} new_hw={new.count('hw')}")
ok = sum(conns.values()) == 1 and old and old.count("native") == len(old) and \
    len(new) >= 3 * 64 and new.count("hw") == len(new)
sys.exit(0 if ok else 1)
PY
)
if [ $? = 0 ]; then
    pass "attach-reroute: new connections rerouted to hw, the one open before native: $out"
else
    fail "attach-reroute: $out"
fi
check "attach-reroute: the report says the open connection's records stay native" \
    sh -c "'$O/tlsmeter-analyze' '$T' | grep -q 'records stay native'"
