#!/usr/bin/env bash
# trace-warn: a tlsmeter warning reaches the trace even when the program sent its stderr to
# /dev/null. A traced Python client downloads (its trace opens), points descriptor 2 at
# /dev/null, lowers RLIMIT_NOFILE and fills it up, and forks: the child cannot
# create its own trace (EMFILE), so its warning must be a `warn` event (with the child's pid)
# in the parent's trace, counted in the parent's end.events, and the report must show it.
# The parent's trace stays whole.
# tlsm-arch: x86_64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload trace-warn
if under_qemu; then
    skip "trace-warn: needs the host's python (not under qemu)"
    exit 0
fi
tls_make_file f.bin 100000
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "trace-warn: openssl s_server did not start"
    exit 0
fi

cat >"$d/client.py" <<'PY'
import os, resource, socket, ssl, sys
port, cert = int(sys.argv[1]), sys.argv[2]
ctx = ssl.create_default_context(cafile=cert)
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1")
s.sendall(b"GET /f.bin HTTP/1.0\r\n\r\n")
got = 0
while True:
    b = s.recv(16384)
    if not b:
        break
    got += len(b)
s.close()
null = os.open("/dev/null", os.O_WRONLY)
os.dup2(null, 2)
os.close(null)
top = max(int(f) for f in os.listdir("/proc/self/fd"))
resource.setrlimit(resource.RLIMIT_NOFILE, (top + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
for _ in range(top + 1):  # fill the holes below the limit: no descriptor left
    try:
        os.open("/dev/null", os.O_RDONLY)
    except OSError:
        break
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
print("got=%d child=%d" % (got, pid))
PY

tls_run "$d/run" "$d/t.%p.jsonl" "$TLSM_PY" "$d/client.py" "$TLS_PORT" "$TLS_CERT"
child=$(sed -n 's/.*child=\([0-9]*\).*/\1/p' "$d/run.out")
tls_traces "$d/t.*.jsonl"
if [ "$(cat "$d/run.rc")" != 0 ] || [ -z "$child" ] || [ "${#TRACES[@]}" != 1 ]; then
    fail "trace-warn: client exit $(cat "$d/run.rc"), child '$child', traces ${#TRACES[@]}: $(head -c 200 "$d/run.err")"
    exit 0
fi
check "trace-warn: the child's failure is a warn event in the parent's trace" \
    "$TLSM_PY" - "${TRACES[0]}" "$child" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
w = [e for e in ev if e["ev"] == "warn"]
assert ev[0]["ev"] == "header" and ev[-1]["ev"] == "end", "not a whole trace"
assert any(e.get("pid") == int(sys.argv[2]) and "RLIMIT_NOFILE" in e["msg"] for e in w), w
PY
# The child's line is counted in the parent's end.events (tracecheck: events == lines
# before end), so a trace with a child's warning is as consistent as any other.
check "trace-warn: the parent's trace with the child's line passes tracecheck (end.events counts it)" \
    "$TLSM_PY" "$TLSM_TOP/tests/tools/tracecheck.py" "${TRACES[0]}" --pid "$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p;q' "${TRACES[0]}")"
if "$O/tlsmeter-analyze" "${TRACES[0]}" 2>/dev/null | grep -q "tlsmeter warned 1 time: no trace .*RLIMIT_NOFILE"; then
    pass "trace-warn: the report shows the warning"
else
    fail "trace-warn: the report does not show the warning"
fi
