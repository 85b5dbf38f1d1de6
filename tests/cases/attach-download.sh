#!/usr/bin/env bash
# attach-download: `tlsmeter attach` on downloads already in progress (our logging client over
# TLS 1.3 and TLS 1.2, Python's ssl module, curl), attached after >= 8 MiB and detached after
# >= 8 MiB more (x86_64; the arm64 VM, under scripts/arm64vm, runs the same at 2 MiB). The download must finish intact with the same exit code; the trace must hold
# exactly the reads the program made while attached (the client logs its running total per
# read; curl's file size brackets it), >= 1 record per 16 KiB, the class `hardware`, the
# connection as joined; after the detach every GOT entry of the process is as before the
# attach (read from outside, tests/tools/gotsnap.py), no descriptor is left behind and the
# trace does not grow. TLSMETER_CRYPTO=hw through an attach: a connection opened after it is
# rerouted, the one open before stays native, and the report says so.
# TLSM_ATTACH_MIB (default 8) sets the size of each window (the file is 6 of them): the arm64
# VM's emulated CPU uses 2.
# In Debian 13's userland (tests/run's trixie run) the same programs run on its OpenSSL 3.5 and
# glibc 2.41, through its own loader.
# tlsm-arch: x86_64 aarch64
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
A=$O/tlsmeter-attach
if [ -n "${TLSM_SAN:-}" ]; then
    skip "attach-download: a sanitizer build of the library cannot be loaded into a program that was not started with the sanitizer runtime"
    exit 0
fi
if under_qemu; then
    skip "attach-download: qemu-user cannot ptrace its guests (the arm64 VM runs this case)"
    exit 0
fi
MIB=$((1024 * 1024))
W=$((${TLSM_ATTACH_MIB:-8} * MIB))
tls_make_file big.bin $((6 * W + 333))
want_sha=$(tls_sha "$TLS_WWW/big.bin")

# progress KIND FILE: bytes received so far (a client log's last total, or a file's size).
progress() {
    if [ "$1" = log ]; then
        tail -n 1 "$2" 2>/dev/null | awk '{n = $3} END {print n + 0}'
    else
        stat -c %s "$2" 2>/dev/null || echo 0
    fi
}

# wait_bytes KIND FILE N PID: bounded wait (60 s) until N bytes arrived, while PID lives.
wait_bytes() {
    for _ in $(seq 1200); do
        [ "$(progress "$1" "$2")" -ge "$3" ] && return 0
        kill -0 "$4" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

# attach_window NAME KIND FILE PID [SETTINGS...]: attach after W bytes, detach after W more.
# Sets W_BEFORE, W_A1 (progress before the attach began and once it was done), W_D0, W_AFTER
# (the same around the detach) and STOPS.
attach_window() {
    local name=$1 kind=$2 file=$3 pid=$4 p=$d/$1 apid n0 n1
    shift 4
    if ! wait_bytes "$kind" "$file" "$W" "$pid"; then
        fail "$name: the download did not reach $W bytes"
        return 1
    fi
    python3 "$TLSM_TOOLS/gotsnap.py" "$pid" >"$p.got0"
    n0=$(ls "/proc/$pid/fd" | wc -l)
    W_BEFORE=$(progress "$kind" "$file")
    "$A" -o "$p.%p.trace" "$@" "$pid" 2>"$p.attach.err" &
    apid=$!
    TLS_PIDS+=("$apid")
    if ! tls_wait_log "$p.attach.err" "attached to" "$apid"; then
        fail "$name: no attach: $(head -c 400 "$p.attach.err")"
        return 1
    fi
    W_A1=$(progress "$kind" "$file")
    if ! wait_bytes "$kind" "$file" $((W_A1 + W)) "$pid"; then
        fail "$name: the download stopped while attached"
        return 1
    fi
    # While attached the slots hold the hooks: the comparison below can fail.
    python3 "$TLSM_TOOLS/gotsnap.py" --compare "$p.got0" "$pid" >"$p.got1" 2>&1
    W_D0=$(progress "$kind" "$file")
    kill -INT "$apid"
    for _ in $(seq 200); do
        kill -0 "$apid" 2>/dev/null || break
        sleep 0.05
    done
    wait "$apid"
    W_AFTER=$(progress "$kind" "$file")
    if ! grep -q "detached from $pid" "$p.attach.err"; then
        fail "$name: no detach: $(tr '\n' ' ' <"$p.attach.err" | head -c 400)"
        return 1
    fi
    STOPS=$(grep -o 'stopped for [0-9.]* ms' "$p.attach.err" | awk '{print $3}' | tr '\n' '/')
    if python3 "$TLSM_TOOLS/gotsnap.py" --compare "$p.got0" "$pid" >"$p.got2" 2>&1 &&
        ! grep -q 'changed 0$' "$p.got1"; then
        pass "$name: every GOT entry is back after the detach ($(tail -n 1 "$p.got2"); while attached: $(tail -n 1 "$p.got1"))"
    else
        fail "$name: GOT after the detach: $(tail -n 3 "$p.got2" | tr '\n' ' '); while attached: $(tail -n 1 "$p.got1")"
    fi
    n1=$(ls "/proc/$pid/fd" | wc -l)
    check "$name: no descriptor left behind ($n0 before, $n1 after)" test "$n0" = "$n1"
    TRACE=$(ls "$d/$name".*.trace 2>/dev/null | head -n 1)
    TRACE_SIZE=$(stat -c %s "$TRACE" 2>/dev/null)
}

# finish NAME PID OUT: the program's end: exit 0, the body intact, the trace as the detach left it.
finish() {
    local name=$1 pid=$2 out=$3 rc
    wait "$pid"
    rc=$?
    check "$name: exit code 0 and the body intact" test "$rc:$(grep -c "$want_sha" "$out")" = "0:1"
    check "$name: nothing written after the detach" test "$(stat -c %s "$TRACE")" = "$TRACE_SIZE"
    tlsm_jsonl "$TRACE"
    check "$name: the copy measured is $(ul_openssl)" grep -q "\"version\":\"$(ul_openssl)" "$TRACE"
    check "$name: the report names the attach and the class hardware" \
        sh -c "'$O/tlsmeter-analyze' '$TRACE' | grep -q '^attached' &&
               '$O/tlsmeter-analyze' '$TRACE' | grep -q 'verdict *\[hardware-aes\]'"
}

if ! tls_server_start 1.3 TLS_AES_256_GCM_SHA384; then
    fail "attach-download: openssl s_server did not start"
    exit 0
fi

# Our client over TLS 1.3 and TLS 1.2: every traced read is one of its own, in order.
for v in 13 12; do
    name=slowget-tls$v
    extra=()
    [ $v = 12 ] && extra=(1)
    if [ $v = 12 ]; then
        tls_server_stop
        tls_server_start 1.2 ECDHE-RSA-AES256-GCM-SHA384 || { fail "$name: no server"; continue; }
    fi
    target_cmd "$TLSM_PROGS/slowget" "$TLS_PORT" big.bin "$d/$name.log" 1500 16384 "${extra[@]}"
    "${TARGET_CMD[@]}" \
        >"$d/$name.out" 2>"$d/$name.err" &
    pid=$!
    TLS_PIDS+=("$pid")
    attach_window "$name" log "$d/$name.log" "$pid" || continue
    finish "$name" "$pid" "$d/$name.out"
    if out=$(python3 "$TLSM_TOOLS/attachcheck.py" "$TRACE" "$d/$name.log" "$W_BEFORE" "$W_A1" "$W_D0" "$W_AFTER"); then
        pass "$name: the trace holds the program's reads $(echo "$out" | tr '\n' ' ')(attached at $W_BEFORE, detached at $W_AFTER bytes; stopped $STOPS ms)"
    else
        fail "$name: $(echo "$out" | tr '\n' ' ')"
    fi
done

# Python's ssl module, logging its running total the same way.
tls_server_stop
tls_server_start 1.3 TLS_AES_128_GCM_SHA256 || fail "python: no server"
name=python
target_cmd "$TLSM_PY" - "$TLS_PORT" "$d/$name.log"
"${TARGET_CMD[@]}" >"$d/$name.out" 2>"$d/$name.err" <<'PY' &
import hashlib, socket, ssl, sys, time
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))))
s.sendall(b"GET /big.bin HTTP/1.0\r\n\r\n")
h, total, n, head = hashlib.sha256(), 0, 0, b""
with open(sys.argv[2], "w") as log:
    while True:
        b = s.recv(1 + (n * 7919 + 16383) % 16384)  # sizes that vary: see slowget.c
        if not b:
            break
        n += 1
        total += len(b)
        if head is not None:
            head += b
            if b"\r\n\r\n" in head:
                h.update(head.split(b"\r\n\r\n", 1)[1])
                head = None
        else:
            h.update(b)
        log.write(f"{n} {len(b)} {total}\n")
        log.flush()
        time.sleep(0.0015)
print(f"total={total} sha256={h.hexdigest()}")
PY
pid=$!
TLS_PIDS+=("$pid")
if attach_window "$name" log "$d/$name.log" "$pid"; then
    finish "$name" "$pid" "$d/$name.out"
    if out=$(python3 "$TLSM_TOOLS/attachcheck.py" "$TRACE" "$d/$name.log" "$W_BEFORE" "$W_A1" "$W_D0" "$W_AFTER"); then
        pass "$name: the trace holds the program's reads $(echo "$out" | tr '\n' ' ')(stopped $STOPS ms)"
    else
        fail "$name: $(echo "$out" | tr '\n' ' ')"
    fi
fi

# curl, rate-limited: the bytes it wrote to its file before the attach and after the detach
# bracket what the trace may hold (its file lags the reads by curl's buffer, <= 100 KiB).
name=curl
if tls_curl_ok; then
    # Half a window a second: under the arm64 VM's emulated CPU, curl must still be
    # downloading when the detach is over and its descriptors are counted.
    target_cmd curl -sk --limit-rate "$((W / 2048))K" -o "$d/$name.body" "https://127.0.0.1:$TLS_PORT/big.bin"
    "${TARGET_CMD[@]}" \
        >"$d/$name.out" 2>"$d/$name.err" &
    pid=$!
    TLS_PIDS+=("$pid")
    if attach_window "$name" file "$d/$name.body" "$pid"; then
        wait "$pid"
        rc=$?
        check "curl: exit code 0 and the body intact" \
            test "$rc:$(tls_sha "$d/$name.body")" = "0:$want_sha"
        check "curl: nothing written after the detach" test "$(stat -c %s "$TRACE")" = "$TRACE_SIZE"
        tlsm_jsonl "$TRACE"
        out=$(python3 "$TLSM_TOOLS/attachcheck.py" "$TRACE")
        got=$(echo "$out" | sed -n 's/.* bytes=\([0-9]*\) .*/\1/p')
        lo=$((W_D0 - W_A1 - 200 * 1024)) hi=$((W_AFTER - W_BEFORE + 200 * 1024))
        if ! echo "$out" | grep -q FAIL && [ "${got:-0}" -ge "$lo" ] && [ "$got" -le "$hi" ]; then
            pass "curl: the trace's $got bytes lie within what curl wrote meanwhile ($lo..$hi); $(echo "$out" | head -n 1) (stopped $STOPS ms)"
        else
            fail "curl: $(echo "$out" | tr '\n' ' ') against what curl wrote meanwhile, $lo..$hi"
        fi
    fi
else
    skip "curl: curl cannot run here (see tls_curl_ok)"
fi
