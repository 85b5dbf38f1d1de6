#!/usr/bin/env bash
# core-lifecycle: the ways a process can end, fork or reshape itself under tlsmeter, each one
# found by review and reproduced before it was fixed:
#  - a FIFO trace whose reader went away: no SIGPIPE death, one warning;
#  - a forked child ending with os._exit (multiprocessing): a complete trace, lib lines included;
#  - 45 dlopen/dlclose cycles between downloads: every connection still traced, 2 instances;
#  - a process title written over the environment: the trace goes where TLSMETER_OUT said.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload core-lifecycle
cd "$d" || exit 1 # a regression of case 4 would write its trace into the current directory

tls_make_file f.bin $((256 * 1024 + 3))
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "core-lifecycle: openssl s_server did not start"
    exit 0
fi
URL="https://127.0.0.1:$TLS_PORT/f.bin"
# get(): one download through Python's ssl (libssl loaded RTLD_LOCAL), the size on stdout.
cat >"$d/get.py" <<PY
import ssl, urllib.request
ctx = ssl.create_default_context(cafile="$TLS_CERT")
ctx.check_hostname = False
def get():
    return len(urllib.request.urlopen("$URL", context=ctx).read())
PY
export PYTHONPATH=$d

# 1. FIFO: the reader takes 100 bytes and leaves; SIGPIPE at its default action.
mkfifo "$d/fifo"
head -c 100 "$d/fifo" >/dev/null &
reader=$!
cat >"$d/pipe.py" <<'PY'
import signal
from get import get
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
for _ in range(3):
    get()
print("done")
PY
TLS_ENV=()
tls_run "$d/pipe" "$d/fifo" "$TLSM_PY" "$d/pipe.py"
kill "$reader" 2>/dev/null
wait "$reader" 2>/dev/null
if [ "$(cat "$d/pipe.rc")" = 0 ] && [ "$(cat "$d/pipe.out")" = "done" ] &&
    [ "$(grep -c '^tlsmeter:' "$d/pipe.err")" = 1 ]; then
    pass "core-lifecycle fifo: reader gone, program unharmed, one warning"
else
    fail "core-lifecycle fifo: exit $(cat "$d/pipe.rc"), stderr: $(head -c 300 "$d/pipe.err")"
fi

# 2. fork + os._exit in the child.
cat >"$d/fork.py" <<'PY'
import os
from get import get
get()
pid = os.fork()
if pid == 0:
    get()
    os._exit(0)
os.waitpid(pid, 0)
PY
tls_run "$d/fork" "$d/fork.%p.jsonl" "$TLSM_PY" "$d/fork.py"
check "core-lifecycle fork + os._exit: both traces complete, every rec's lib defined" \
    "$TLSM_PY" - "$d" <<'PY'
import glob, json, sys
files = sorted(glob.glob(sys.argv[1] + "/fork.*.jsonl"))
assert len(files) == 2, files
for f in files:
    ev = [json.loads(l) for l in open(f)]
    assert ev[0]["ev"] == "header" and ev[-1]["ev"] == "end", (f, ev[-1]["ev"])
    libs = {e["id"] for e in ev if e["ev"] == "lib"}
    recs = [e for e in ev if e["ev"] == "rec" and e.get("dir", "in") == "in"]
    assert recs and {r["lib"] for r in recs} <= libs, f
PY

# 3. plugin churn: a dlopen/dlclose between downloads.
cat >"$d/churn.py" <<'PY'
import _ctypes
from get import get
for _ in range(45):
    get()
    _ctypes.dlclose(_ctypes.dlopen("libz.so.1", 2))
PY
tls_run "$d/churn" "$d/churn.%p.jsonl" "$TLSM_PY" "$d/churn.py"
check "core-lifecycle dlopen/dlclose x45: all 45 connections traced, 2 instances" \
    "$TLSM_PY" - "$d" <<'PY'
import glob, json, sys
ev = [json.loads(l) for l in open(glob.glob(sys.argv[1] + "/churn.*.jsonl")[0])]
conns = {e["conn"] for e in ev if e["ev"] == "rec" and e.get("dir", "in") == "in" and e["type"] == 23}
assert len(conns) == 45, len(conns)
assert sum(e["ev"] == "lib" for e in ev) == 2, sum(e["ev"] == "lib" for e in ev)
assert ev[-1]["untracked_ctx"] == 0
PY

# 4. setproctitle-style: argv and environ memory overwritten before the first download.
cat >"$d/title.py" <<'PY'
import ctypes, os
from get import get
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_void_p
p = libc.getenv(b"TLSMETER_OUT")
n = len(os.environ["TLSMETER_OUT"])
ctypes.memmove(p, b"worker: process title".ljust(n, b"\0")[:n], n)
get()
PY
tls_run "$d/title" "$d/title.%p.jsonl" "$TLSM_PY" "$d/title.py"
if ls "$d"/title.*.jsonl >/dev/null 2>&1 && [ "$(cat "$d/title.rc")" = 0 ]; then
    pass "core-lifecycle process title: the trace is where TLSMETER_OUT said"
else
    fail "core-lifecycle process title: no $d/title.*.jsonl (files: $(echo "$d"/*))"
fi
tls_server_stop
