#!/usr/bin/env bash
# trace-places: where TLSMETER_OUT puts the trace. A directory means a file per process
# inside it (tlsmeter.PID.jsonl), never DIR.1 beside it; /dev/stdout when stdout is a pipe
# writes into the pipe, never a regular file /dev/stdout.1; a symlink to a regular file is
# refused with a warning naming it (no NAME.1 beside it); a template too long for a path is
# refused with a warning, never cut; another user's FIFO planted at the exact name is passed
# over for NAME.1. The program's output and exit code never change.
# tlsm-arch: x86_64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload trace-places
if under_qemu; then
    skip "trace-places: host paths and python (not under qemu)"
    exit 0
fi
tls_make_file f.bin 50000
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "trace-places: openssl s_server did not start"
    exit 0
fi
dl() { # dl NAME TEMPLATE: the Python client, traced with TLSMETER_OUT=TEMPLATE
    tls_client py "$TLS_PORT" f.bin "$d/$1" "$2"
    [ "$(cat "$d/$1.rc")" = 0 ] && [ "$(tls_size "$d/$1.body")" = 50000 ]
}

mkdir -p "$d/dir"
if dl dir "$d/dir" && [ -f "$d/dir/tlsmeter.$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$d"/dir/*.jsonl 2>/dev/null | head -1).jsonl" ] &&
    [ ! -e "$d/dir.1" ]; then
    tls_trace_check "trace-places directory: a file per process inside it" "$d"/dir/tlsmeter.*.jsonl --conns 1
else
    fail "trace-places directory: found $(cd "$d" && find dir dir.1 2>/dev/null | tr '\n' ' ')"
fi

# /dev/stdout through a pipe (the client's own stdout goes to its .out file, so a small
# shell runs it with stdout a pipe into cat).
env LD_PRELOAD="$TLSM_PRELOAD" TLSMETER_OUT=/dev/stdout timeout -k 5 30 "$TLSM_PY" \
    "$TLSM_TOOLS/pyclient.py" --port "$TLS_PORT" --cafile "$TLS_CERT" --path /f.bin \
    --out "$d/pipe.body" 2>"$d/pipe.err" | cat >"$d/pipe.out"
if [ -e /dev/stdout.1 ]; then
    fail "trace-places /dev/stdout: a file /dev/stdout.1 was created"
    rm -f /dev/stdout.1
elif grep -q '"ev":"header"' "$d/pipe.out" && grep -q '"ev":"end"' "$d/pipe.out"; then
    pass "trace-places /dev/stdout (a pipe): the trace went into the pipe"
else
    fail "trace-places /dev/stdout: $(head -c 200 "$d/pipe.err")"
fi

printf 'precious\n' >"$d/victim"
ln -s "$d/victim" "$d/planted-link.jsonl"
if dl link "$d/planted-link.jsonl" && [ "$(cat "$d/victim")" = precious ] && [ ! -e "$d/planted-link.jsonl.1" ] &&
    grep -q "^tlsmeter: cannot create trace $d/planted-link.jsonl" "$d/link.err"; then
    pass "trace-places symlink to a file: refused with a warning naming it, no NAME.1"
else
    fail "trace-places symlink to a file: $(head -c 200 "$d/link.err") $(ls "$d" | grep planted)"
fi

long=$d/$(head -c 5000 /dev/zero | tr '\0' 'x').jsonl
if dl long "$long" && [ "$(grep -c '^tlsmeter: cannot create trace' "$d/long.err")" = 1 ] &&
    [ -z "$(find "$d" -maxdepth 1 -name 'xxxx*')" ]; then
    pass "trace-places template over PATH_MAX: refused with a warning, nothing cut"
else
    fail "trace-places long template: $(head -c 200 "$d/long.err")"
fi

if [ "$(id -u)" = 0 ]; then
    mkfifo "$d/planted-fifo.jsonl" && chown nobody "$d/planted-fifo.jsonl"
    if dl fifo "$d/planted-fifo.jsonl" && [ -f "$d/planted-fifo.jsonl.1" ]; then
        tls_trace_check "trace-places someone else's FIFO: passed over for NAME.1" "$d/planted-fifo.jsonl.1" --conns 1
    else
        fail "trace-places planted FIFO: $(head -c 200 "$d/fifo.err") $(ls "$d" | grep planted)"
    fi
else
    skip "trace-places planted FIFO: needs root (a FIFO owned by another user)"
fi
