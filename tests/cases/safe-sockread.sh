#!/usr/bin/env bash
# safe-sockread: OpenSSL linked into a stripped dynamic executable (tests/vendor/vexe.c) is
# measured through its socket reads, which tlsmeter takes from the executable's PLT, where
# every read of the program passes too. The program reads a 4 MiB file in 512-byte read(2)
# calls, closes it, then downloads 2 MiB over TLS on a socket that gets the file's descriptor
# number. Under strace: (1) the file's reads cost no fstat each: the traced run makes at most
# one fstat-family call per socket read plus a few of tlsmeter's own more than the untraced
# run (not one per file read); (2) the sockread events carry exactly the bytes the program's
# socket reads returned (strace -y names the socket descriptors), none of the file's, and
# output and exit code are unchanged, whether the file was closed by close(), by a raw
# close system call or by close_range, so the socket reuses a number known as "not a
# socket"; (3) the reverse: a socketpair read, closed by a raw system call, its number reused
# by the file read again: no file byte counted as a socket's.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload safe-sockread
if under_qemu; then
    skip "safe-sockread: host only (strace of the target program)"
    exit 0
fi
command -v strace >/dev/null || "$TLSM_TOP/scripts/install-deps" --extra strace >/dev/null 2>&1
if ! command -v strace >/dev/null; then
    skip "safe-sockread: strace is not installed (scripts/install-deps --extra strace)"
    exit 0
fi
if ! out=$("$TLSM_TOP/tests/vendor/vexe-build" "$O/vexe" 2>&1); then
    if echo "$out" | grep -q 'static archives'; then
        skip "safe-sockread: $out"
    else
        fail "safe-sockread: vexe did not build: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
    fi
    exit 0
fi
VEXE=$O/vexe/vexe
BODY=$((2 * 1024 * 1024 + 99))
tls_make_file big.bin "$BODY"
want_sha=$(tls_sha "$TLS_WWW/big.bin")
head -c $((4 * 1024 * 1024)) /dev/urandom >"$d/file.bin"
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "safe-sockread: openssl s_server did not start"
    exit 0
fi

# srun PREFIX TRACE ARGS...: vexe under strace (fstat family and socket reads, -y), with the
# preload when TRACE (a TLSMETER_OUT template) is given. PREFIX.{out,err,rc,st}.
srun() {
    local p=$1 trace=$2 pre=(-u LD_PRELOAD)
    shift 2
    [ -n "$trace" ] && pre=(LD_PRELOAD="$TLSM_PRELOAD" TLSMETER_OUT="$trace")
    timeout -k 5 60 strace -f -qq -y -o "$p.st" \
        -e trace=fstat,newfstatat,statx,read,recvfrom,recvmsg env "${pre[@]}" \
        "$VEXE" -p "$TLS_PORT" -c "$TLS_CERT" -f big.bin -r "$d/file.bin" "$@" >"$p.out" 2>"$p.err"
    echo $? >"$p.rc"
    [ -n "$trace" ] && tlsm_jsonl "$trace"
    return 0
}

# The counts and sums, checked: TRACE PLAIN.st TRACED.st [limit on extra fstat calls].
CHECK_PY='
import json, re, sys
trace, plain_st, traced_st = sys.argv[1:4]
def calls(path):
    fst, sock_calls, sock_bytes = 0, 0, 0
    for l in open(path):
        m = re.match(r"(?:\d+ +)?(\w+)\((\d+)(<[^>]*>)?", l)
        if not m:
            continue
        if m.group(1) in ("fstat", "newfstatat", "statx"):
            fst += 1
        elif re.match(r"<(TCP|TCPv6|UDP|UNIX|socket)", m.group(3) or ""):
            r = re.search(r"= (-?\d+)", l)
            if r and int(r.group(1)) >= 0:
                sock_calls += 1
                sock_bytes += int(r.group(1))
    return fst, sock_calls, sock_bytes
f0, _, _ = calls(plain_st)
f1, n, wire = calls(traced_st)
ev = [json.loads(l) for l in open(trace)]
sock = [e for e in ev if e["ev"] == "sockread" and e["got"] >= 0]
got = sum(e["got"] for e in sock)
assert n > 100, "only %d socket reads under strace: the download did not run" % n
assert got == wire, "sockread events carry %d bytes in %d reads, the program read %d in %d from sockets" % (got, len(sock), wire, n)
assert len(sock) == n, "%d sockread events, %d socket reads" % (len(sock), n)
if len(sys.argv) > 4:
    extra = f1 - f0
    assert extra <= n + int(sys.argv[4]), "%d fstat-family calls more than untraced for %d socket reads (file reads pay one each?)" % (extra, n)
    print("ok %d fstat-family calls untraced, %d traced, %d socket reads" % (f0, f1, n))
print("ok %d socket reads, %d bytes, all in sockread events" % (n, wire))
'

# (1) and (2): close, a raw close, close_range.
for how in close raw range; do
    p=$d/$how
    srun "$p.plain" "" -k "$how"
    srun "$p.traced" "$p.%p.jsonl" -k "$how"
    tls_traces "$p.*.jsonl"
    limit=()
    [ "$how" = close ] && limit=(48)
    if ! why=$(tls_same_run x "$p.plain" "$p.traced"); then
        fail "safe-sockread $how: $why"
    elif ! grep -q "sha256=$want_sha" "$p.traced.out" ||
        ! grep -q "^file fd=[0-9]* bytes=$((4 * 1024 * 1024))$" "$p.traced.out"; then
        fail "safe-sockread $how: wrong output: $(head -c 200 "$p.traced.out")"
    elif fd=$(sed -n 's/^file fd=\([0-9]*\) .*/\1/p' "$p.traced.out") &&
        ! grep -qE "^[0-9]+ +read\($fd<(TCP|socket)" "$p.traced.st"; then
        fail "safe-sockread $how: the download's socket did not get the file's number $fd (test is broken)"
    elif [ "${#TRACES[@]}" -ne 1 ]; then
        fail "safe-sockread $how: ${#TRACES[@]} traces, want 1"
    else
        name="safe-sockread file closed by $how, socket on its number: sockread bytes exact"
        [ "$how" = close ] && name="safe-sockread 8192 file reads pay no fstat each; sockread bytes exact"
        tls_check "$name" "$TLSM_PY" -c "$CHECK_PY" "${TRACES[0]}" "$p.plain.st" "$p.traced.st" \
            "${limit[@]}"
    fi
done

# (3) A socket's number reused by a file after a raw close.
p=$d/pair
srun "$p.plain" "" -S
srun "$p.traced" "$p.%p.jsonl" -S
tls_traces "$p.*.jsonl"
if ! why=$(tls_same_run x "$p.plain" "$p.traced"); then
    fail "safe-sockread pair: $why"
elif ! grep -qE "^pair got=100 then file fd=([0-9]+) \(pair fd \1\) bytes=$((4 * 1024 * 1024))$" "$p.traced.out"; then
    fail "safe-sockread pair: the file did not reuse the socket's number: $(tail -n 1 "$p.traced.out")"
elif [ "${#TRACES[@]}" -ne 1 ]; then
    fail "safe-sockread pair: ${#TRACES[@]} traces, want 1"
else
    tls_check "safe-sockread socket closed raw, file on its number: no file byte in sockread" \
        "$TLSM_PY" -c "$CHECK_PY" "${TRACES[0]}" "$p.plain.st" "$p.traced.st"
fi
