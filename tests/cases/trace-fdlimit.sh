#!/usr/bin/env bash
# trace-fdlimit: a program that leaves itself exactly one free descriptor (RLIMIT_NOFILE)
# before it opens its TLS connection works the same traced: tlsmeter does not take that
# descriptor (it keeps TLSM_FD_RESERVE = 16 free for the program or opens no trace), and says
# so once on stderr.
# tlsm-arch: x86_64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload trace-fdlimit
if under_qemu; then
    skip "trace-fdlimit: needs the host's python (not under qemu)"
    exit 0
fi
tls_make_file f.bin 70000
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "trace-fdlimit: openssl s_server did not start"
    exit 0
fi
# One descriptor free, then the download (pyclient imports ssl only now: libssl arrives,
# the trace would open, then the socket needs the last descriptor).
cat >"$d/one.py" <<'PY'
import os, resource, runpy, sys
fds = [int(f) for f in os.listdir("/proc/self/fd")]
top = max(fds)
resource.setrlimit(resource.RLIMIT_NOFILE, (top + 2, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
for _ in range(top + 2):  # fill every hole: exactly one number left (top + 1)
    try:
        fd = os.open("/dev/null", os.O_RDONLY)
    except OSError:
        break
    if fd == top + 1:
        os.close(fd)
        break
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
PY
args=("$d/one.py" "$TLSM_TOOLS/pyclient.py" --port "$TLS_PORT" --cafile "$TLS_CERT" --path /f.bin)
tls_run "$d/plain" "" "$TLSM_PY" "${args[@]}"
tls_run "$d/traced" "$d/t.%p.jsonl" "$TLSM_PY" "${args[@]}"
if [ "$(cat "$d/plain.rc")" != 0 ]; then
    fail "trace-fdlimit: the client fails even untraced: $(head -c 200 "$d/plain.err")"
elif [ "$(cat "$d/traced.rc")" = 0 ] && cmp -s "$d/plain.out" "$d/traced.out" &&
    [ "$(grep -c '^tlsmeter: no trace .*RLIMIT_NOFILE' "$d/traced.err")" = 1 ]; then
    pass "trace-fdlimit: one free descriptor: the download works traced, one warning"
else
    fail "trace-fdlimit: exit $(cat "$d/traced.rc"), stderr: $(head -c 300 "$d/traced.err")"
fi
