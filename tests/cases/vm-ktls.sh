#!/usr/bin/env bash
# vm-ktls: kernel TLS (kTLS) with real programs on a real kernel with the tls module (run it
# with scripts/arm64vm: Debian 12's arm64 kernel with tls.ko, OpenSSL 3.0). kTLS moves the
# record crypto into the kernel: libssl makes no EVP call for those records, so no rec event
# can exist for them. The trace must say so (a blind entry `ktls`, the analyzer's `ktls`
# verdict) instead of reading as "no crypto here", keep the program's reads and writes with
# the bytes the program counted, and leave its output as it is. The kernel's own counters
# (/proc/net/tls_stat: TlsRxSw, TlsTxSw count the sockets it did software kTLS for) and
# OpenSSL's own words (s_client "Using Kernel TLS for receiving", s_server "KTLS SENDFILE")
# are the independent witnesses that the kernel did the crypto. kTLS is asked for with
# OPENSSL_CONF (system_default Options = KTLS): OpenSSL 3.0's s_client and s_server have no
# -ktls switch.
#  1. receive: a traced s_client fetches a file from an untraced s_server -WWW over TLS 1.2
#     AES-GCM (3.0 offloads receive for TLS 1.2 only): TlsRxSw +1; the trace's ktls entry (dir
#     in), its reads adding up to what s_client printed, no application-data record decrypted;
#     the report says decryption moved into the kernel; output identical to an untraced run.
#     Its request went out through the kernel too (TlsTxSw): a ktls entry dir out, 23 bytes.
#  2. send: a traced s_server writes a file (its stdin, SSL_write per 16 KiB) over TLS 1.3 to
#     an untraced s_client: TlsTxSw +1; ktls entry dir out; writes add up to the file; no
#     application-data record sealed. Then a traced s_server -WWW -sendfile: the kernel sends
#     the file (KTLS SENDFILE, TlsTxSw +1); the trace holds its SSL_sendfile calls as writes
#     adding up to the file (the client's body), the ktls entry dir out, no sealed application
#     record; the report says encryption moved into the kernel, never "not the bottleneck";
#     s_server's log and the client's output as in an untraced run. A client that sends its
#     request with SSL_sendfile (tests/progs/sendfileget.c): the same for its 23 bytes, and
#     SSL_sendfile's return value and errno as without tlsmeter. And s_server -WWW without
#     -sendfile: its SSL BIO writes inside libssl (no hooked call, no record); the ktls
#     entry dir out comes from SSL_free, and the report says encryption moved into the kernel.
#  3. the same programs without kTLS asked for: records seen as always, no ktls entry, the
#     kernel's counters unchanged, the same bytes.
# Skips (saying why) where there is no real kernel with tls: under qemu-user, without root to
# load the module, when `modprobe tls` fails (a host without tls.ko), or when this OpenSSL does
# not offload at all.
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"

# ktls_here: true when this kernel does kTLS (the tls module loaded now); else the reason in
# KTLS_SKIP.
ktls_here() {
    local out
    KTLS_SKIP=
    if under_qemu; then
        KTLS_SKIP="$(target_arch) programs under qemu-user run on the host's kernel; kTLS needs a real kernel with tls.ko (scripts/arm64vm vm-ktls)"
    elif [ -r /proc/net/tls_stat ]; then
        return 0
    elif [ "$(id -u)" != 0 ]; then
        KTLS_SKIP="the tls module is not loaded and loading it needs root (scripts/arm64vm vm-ktls runs as root)"
    elif ! command -v modprobe >/dev/null; then
        KTLS_SKIP="the tls module is not loaded and there is no modprobe to load it (kernel $(uname -r))"
    elif ! out=$(modprobe tls 2>&1); then
        KTLS_SKIP="no kernel TLS on this kernel ($(uname -r)): modprobe tls: $(echo "$out" | tail -n 1) (scripts/arm64vm vm-ktls boots one with tls.ko)"
    elif [ ! -r /proc/net/tls_stat ]; then
        KTLS_SKIP="modprobe tls succeeded but /proc/net/tls_stat is missing"
    fi
    [ -z "$KTLS_SKIP" ]
}

if ! ktls_here; then
    skip "vm-ktls: $KTLS_SKIP"
    exit 0
fi
d=$(case_dir)
tls_init "$d"
tls_need_preload vm-ktls
tls_analyzer vm-ktls
SIZE=1048576 # 64 full records: TCG is slow

# OpenSSL 3.0 turns kTLS on per SSL_CTX (SSL_OP_ENABLE_KTLS): the system default section
# applies it to every SSL_CTX a program makes.
KTLS_CONF=$d/ktls.cnf
cat >"$KTLS_CONF" <<'EOF'
openssl_conf = openssl_init
[openssl_init]
ssl_conf = ssl_sect
[ssl_sect]
system_default = system_default_sect
[system_default_sect]
Options = KTLS
EOF

# tls_stat NAME: the kernel's counter NAME (/proc/net/tls_stat).
tls_stat() {
    awk -v k="$1" '$1 == k { print $2 }' /proc/net/tls_stat
}

# traced_server PREFIX STDIN CONF ARGS...: s_server under the preload (trace PREFIX.%p.jsonl;
# UNTRACED=1: without it), from the docroot, on a free port, with OPENSSL_CONF=CONF ("" for
# none) and stdin STDIN; waits (bounded) for ACCEPT. Sets PORT and SRV_PID.
traced_server() {
    local p=$1 in=$2 conf=$3 port
    shift 3
    local env=(-u LD_PRELOAD)
    [ -z "${UNTRACED:-}" ] && env=(LD_PRELOAD="$TLSM_PRELOAD" TLSMETER_OUT="$p.%p.jsonl")
    [ -n "$conf" ] && env+=(OPENSSL_CONF="$conf")
    for _ in 1 2 3 4 5; do
        port=$(tls_free_port)
        (cd "$TLS_WWW" && exec env "${env[@]}" openssl s_server -accept "127.0.0.1:$port" \
            -cert "$TLS_CERT" -key "$TLS_KEY" -naccept 1 "$@" <"$in") >"$p.log" 2>&1 &
        SRV_PID=$!
        TLS_PIDS+=("$SRV_PID")
        if tls_wait_log "$p.log" ACCEPT "$SRV_PID"; then
            PORT=$port
            return 0
        fi
        tls_stop_pid "$SRV_PID"
    done
    return 1
}

# server_done PID: bounded wait (30 s) for the server to end by itself (-naccept 1, or its
# stdin's end), then stop it if it did not.
server_done() {
    for _ in $(seq 300); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    tls_stop_pid "$1"
}

# plain_client PREFIX PORT: an untraced s_client that sends nothing and prints what the
# server writes until it closes (stdout PREFIX.out).
plain_client() {
    timeout -k 5 60 env -u LD_PRELOAD openssl s_client -connect "127.0.0.1:$2" -quiet \
        -CAfile "$TLS_CERT" -servername localhost </dev/null >"$1.out" 2>"$1.err"
    echo "$?" >"$1.rc"
}

# facts TRACE: what the trace holds, as KEY=VALUE lines: ktls_in, ktls_out (blind events of
# each direction), end_conns, end_send_conns (end.blind's ktls entry), reads, got (bytes the
# reads returned), writes, written, close_got, close_wbytes (the connections' totals),
# app_in, app_out (application-data records decrypted, sealed), recs_in, recs_out.
facts() {
    "$TLSM_PY" - "$1" <<'PY'
import json, sys
text = open(sys.argv[1], "rb").read().replace(b"\0", b"").decode()
ev = [json.loads(l) for l in text.splitlines() if l.strip()]
f = dict.fromkeys(["ktls_in", "ktls_out", "end_conns", "end_send_conns", "reads", "got",
                   "writes", "written", "close_got", "close_wbytes", "app_in", "app_out",
                   "recs_in", "recs_out"], 0)
for e in ev:
    k = e["ev"]
    if k == "blind" and e.get("what") == "ktls":
        f["ktls_" + e.get("dir", "in")] += 1
    elif k == "read":
        f["reads"] += 1
        f["got"] += max(e["got"], 0)
    elif k == "write":
        f["writes"] += 1
        f["written"] += max(e["written"], 0)
    elif k == "conn" and e.get("phase") == "close":
        f["close_got"] += e["got"]
        f["close_wbytes"] += e.get("wbytes", 0)
    elif k == "rec":
        d = e.get("dir", "in")
        f["recs_" + d] += 1
        f["app_" + d] += e.get("type") == 23
    elif k == "end":
        for b in e.get("blind", []):
            if b.get("what") == "ktls":
                f["end_conns"] += b.get("conns", 0)
                f["end_send_conns"] += b.get("send_conns", 0)
for k, v in f.items():
    print("%s=%d" % (k, v))
PY
}

# want FACTS KEY=VALUE...: each KEY has VALUE in FACTS (the output of facts); prints the
# first that differs.
want() {
    local f=$1 kv have
    shift
    for kv in "$@"; do
        have=$(sed -n "s/^${kv%%=*}=//p" <<<"$f")
        if [ "$have" != "${kv#*=}" ]; then
            echo "${kv%%=*} is ${have:-missing}, want ${kv#*=} ($(tr '\n' ' ' <<<"$f"))"
            return 1
        fi
    done
}

# fact FACTS KEY: the value of KEY in FACTS.
fact() {
    sed -n "s/^$2=//p" <<<"$1"
}

# all CMD...: each CMD (a string, evaluated) succeeds; prints the first that fails.
all() {
    local c
    for c in "$@"; do
        eval "$c" || {
            echo "failed: $c"
            return 1
        }
    done
}

# one_trace GLOB: TRACE, the one trace file GLOB matches.
one_trace() {
    tls_traces "$1"
    [ "${#TRACES[@]}" -eq 1 ] && TRACE=${TRACES[0]}
}

tls_make_file f.bin "$SIZE"
file_sha=$(tls_sha "$TLS_WWW/f.bin")

# ---- 1. receive: traced s_client, TLS 1.2 AES-GCM, kTLS asked for ----
name="vm-ktls receive"
if ! tls_server_start 1.2 ECDHE-RSA-AES128-GCM-SHA256 2>"$d/server.err"; then
    fail "$name: s_server did not start: $(head -c 300 "$d/server.err")"
    exit 0
fi
OPENSSL_CONF=$KTLS_CONF tls_client sclient "$TLS_PORT" f.bin "$d/rx-plain"
rx0=$(tls_stat TlsRxSw) tx0=$(tls_stat TlsTxSw)
TLS_ENV=(OPENSSL_CONF="$KTLS_CONF")
tls_client sclient "$TLS_PORT" f.bin "$d/rx" "$d/rx.%p.jsonl"
TLS_ENV=()
rx1=$(tls_stat TlsRxSw) tx1=$(tls_stat TlsTxSw)
if [ "$rx1" = "$rx0" ] && ! grep -q 'Using Kernel TLS for receiving' "$d/rx.err"; then
    skip "$name: this OpenSSL did not offload (no 'Using Kernel TLS' line, TlsRxSw unchanged: built without kTLS?)"
    exit 0
fi
check "$name: the kernel decrypted (TlsRxSw $rx0 -> $rx1, s_client: Using Kernel TLS for receiving)" \
    all "[ $rx1 -eq $((rx0 + 1)) ]" "grep -q 'Using Kernel TLS for receiving' $d/rx.err"
got=$(cat "$d/rx.got")
check "$name: s_client's output and exit as without tlsmeter, body = the file ($got bytes printed)" \
    all "tls_same_run x $d/rx-plain $d/rx" "[ $(tls_sha "$d/rx.body") = $file_sha ]"
if one_trace "$d/rx.*.jsonl"; then
    f=$(facts "$TRACE")
    check "$name: trace: ktls entry dir in (blind event and end), reads add up to s_client's $got bytes, no application record decrypted" \
        want "$f" ktls_in=1 end_conns=1 got="$got" close_got="$got" app_in=0
    # Its request went out through the kernel as well: s_client's own line and TlsTxSw say
    # so, and so must the trace.
    req=$(tls_size "$d/rx.req")
    check "$name: its $req-byte request sent with kTLS (TlsTxSw $tx0 -> $tx1): ktls entry dir out, writes add up" \
        all "[ $tx1 -eq $((tx0 + 1)) ]" "grep -q 'Using Kernel TLS for sending' $d/rx.err" \
        "want '$f' ktls_out=1 end_send_conns=1 written=$req close_wbytes=$req app_out=0"
    run_tool "$A" "$TRACE" >"$d/rx.report" 2>&1
    check "$name: report: decryption moved into the kernel (ktls verdict), not seen names kernel TLS" \
        all "grep -q '\[ktls\] .*1 connection of .*received with kernel TLS (kTLS): decryption moved into the kernel' $d/rx.report" \
        "grep -q 'its cost is the process.s system CPU time, not in this trace' $d/rx.report" \
        "grep -q '^not seen .*kernel TLS (kTLS)' $d/rx.report" \
        "grep -q '\[ktls\] .*1 connection of .*sent with kernel TLS (kTLS): encryption moved into the kernel' $d/rx.report"
else
    fail "$name: want one trace, got ${#TRACES[@]}: $(head -c 300 "$d/rx.err")"
fi

# ---- 2. send from a client: its request through SSL_sendfile (tests/progs/sendfileget.c) ----
# The kernel sends it (TlsTxSw +1 per run); the program sees the same return value, errno
# (a sentinel SSL_sendfile leaves alone), SSL_get_error and download with and without tlsmeter.
name="vm-ktls SSL_sendfile"
printf 'GET /f.bin HTTP/1.0\r\n\r\n' >"$d/sfget.req"
req=$(tls_size "$d/sfget.req")
OPENSSL_CONF=$KTLS_CONF tls_run "$d/sfget-plain" "" "$TLSM_PROGS/sendfileget" "$TLS_PORT" \
    "$TLS_CERT" "$d/sfget.req"
tx0=$(tls_stat TlsTxSw)
OPENSSL_CONF=$KTLS_CONF tls_run "$d/sfget" "$d/sfget.%p.jsonl" "$TLSM_PROGS/sendfileget" \
    "$TLS_PORT" "$TLS_CERT" "$d/sfget.req"
tx1=$(tls_stat TlsTxSw)
check "$name: the kernel sent the $req-byte request (sendfile ret=$req, TlsTxSw $tx0 -> $tx1); return value, errno, SSL_get_error and download as without tlsmeter: $(tr '\n' ' ' <"$d/sfget.out")" \
    all "grep -q '^sendfile ret=$req errno=33 ' $d/sfget.out" "[ $tx1 -eq $((tx0 + 1)) ]" \
        "tls_same_run x $d/sfget-plain $d/sfget"
if one_trace "$d/sfget.*.jsonl"; then
    f=$(facts "$TRACE")
    check "$name: trace: one write (SSL_sendfile) of $req bytes, the connection's total, ktls entry dir out, no application record sealed" \
        all "want '$f' writes=1 written=$req close_wbytes=$req ktls_out=1 end_send_conns=1 app_out=0" \
            "grep -q '\"ev\":\"write\".*\"fn\":\"SSL_sendfile\"' $TRACE"
else
    fail "$name: want one trace, got ${#TRACES[@]}: $(head -c 300 "$d/sfget.err")"
fi

# ---- 3. receive, kTLS not asked for ----
name="vm-ktls receive without kTLS"
rx0=$(tls_stat TlsRxSw)
tls_client sclient "$TLS_PORT" f.bin "$d/rx-off" "$d/rx-off.%p.jsonl"
rx1=$(tls_stat TlsRxSw)
got=$(cat "$d/rx-off.got")
if one_trace "$d/rx-off.*.jsonl"; then
    f=$(facts "$TRACE")
    check "$name: TlsRxSw unchanged ($rx1), body = the file, records decrypted in the trace ($(fact "$f" app_in) application), reads add up to $got bytes, no ktls entry" \
        all "[ $rx1 -eq $rx0 ]" "[ $(tls_sha "$d/rx-off.body") = $file_sha ]" \
            "[ $(fact "$f" app_in) -ge $((SIZE / 16384)) ]" \
            "want '$f' ktls_in=0 ktls_out=0 end_conns=0 got=$got close_got=$got"
else
    fail "$name: want one trace, got ${#TRACES[@]}: $(head -c 300 "$d/rx-off.err")"
fi
tls_stop_pid "$TLS_SRV_PID"

# ---- 2. send: traced s_server writing its stdin with SSL_write, TLS 1.3 ----
# s_server (without -quiet) takes a line starting with Q, q, r, R, K, k, c, P or S from its
# stdin as a command: the file it sends has none of those bytes. Its stdin's end ends it.
head -c "$SIZE" /dev/urandom | tr 'QqrRKkcPS' 'ABCDEFGHI' >"$d/send.bin"
send_sha=$(tls_sha "$d/send.bin")

# send_run NAME PREFIX CONF: traced s_server -tls1_3 sending send.bin to plain_client; TX0
# and TX1 the kernel's TlsTxSw around it.
send_run() {
    local name=$1 p=$2
    TX0=$(tls_stat TlsTxSw)
    if ! traced_server "$p" "$d/send.bin" "$3" -tls1_3; then
        fail "$name: traced s_server did not start: $(head -c 300 "$p.log")"
        return 1
    fi
    plain_client "$p.client" "$PORT"
    server_done "$SRV_PID"
    TX1=$(tls_stat TlsTxSw)
    tlsm_jsonl "$p.%p.jsonl"
    one_trace "$p.*.jsonl" || {
        fail "$name: want one trace, got ${#TRACES[@]}: $(head -c 300 "$p.log")"
        return 1
    }
}

name="vm-ktls send"
if send_run "$name" "$d/tx" "$KTLS_CONF"; then
    f=$(facts "$TRACE")
    check "$name: the kernel encrypted (TlsTxSw $TX0 -> $TX1); the client got the file" \
        all "[ $TX1 -eq $((TX0 + 1)) ]" "[ $(tls_sha "$d/tx.client.out") = $send_sha ]"
    check "$name: trace: ktls entry dir out, writes add up to the $SIZE bytes s_server read, no application record sealed" \
        want "$f" ktls_out=1 end_send_conns=1 written="$SIZE" close_wbytes="$SIZE" app_out=0
    run_tool "$A" "$TRACE" >"$d/tx.report" 2>&1
    check "$name: report: encryption moved into the kernel (ktls verdict with the sending figures)" \
        all "sed -n '/^encryption/,\$p' $d/tx.report | grep -q '\[ktls\] .*1 connection of .*sent with kernel TLS (kTLS): encryption moved into the kernel'" \
        "grep -q 'kernel TLS encrypted them (ktls)' $d/tx.report"
fi

name="vm-ktls send without kTLS"
if send_run "$name" "$d/tx-off" ""; then
    f=$(facts "$TRACE")
    check "$name: TlsTxSw unchanged, the client got the file, records sealed in the trace ($(fact "$f" app_out) application), writes add up, no ktls entry" \
        all "[ $TX1 -eq $TX0 ]" "[ $(tls_sha "$d/tx-off.client.out") = $send_sha ]" \
            "[ $(fact "$f" app_out) -ge $((SIZE / 16384)) ]" \
            "want '$f' ktls_in=0 ktls_out=0 end_send_conns=0 written=$SIZE close_wbytes=$SIZE"
fi

# ---- 2. (and 3.) s_server -WWW -sendfile: the file goes out through SSL_sendfile ----
# sendfile_run NAME PREFIX CONF: traced s_server -WWW -sendfile (UNTRACED=1: without the
# preload; NO_SENDFILE=1: without -sendfile), an untraced s_client GET.
sendfile_run() {
    local name=$1 p=$2 sf=(-sendfile)
    [ -n "${NO_SENDFILE:-}" ] && sf=()
    TX0=$(tls_stat TlsTxSw)
    if ! traced_server "$p" /dev/null "$3" -tls1_3 -WWW "${sf[@]}"; then
        fail "$name: s_server did not start: $(head -c 300 "$p.log")"
        return 1
    fi
    tls_client sclient "$PORT" f.bin "$p.client"
    server_done "$SRV_PID"
    TX1=$(tls_stat TlsTxSw)
    [ -n "${UNTRACED:-}" ] && return 0
    tlsm_jsonl "$p.%p.jsonl"
    one_trace "$p.*.jsonl" || {
        fail "$name: want one trace, got ${#TRACES[@]}: $(head -c 300 "$p.log")"
        return 1
    }
}

# same_log A B: s_server's logs A and B alike but for tlsmeter's own lines (its ACCEPT port
# differs from run to run); prints the difference.
same_log() {
    diff <(tls_stderr_minus_notes "$1" | sed 's/127\.0\.0\.1:[0-9]*/PORT/g') \
        <(tls_stderr_minus_notes "$2" | sed 's/127\.0\.0\.1:[0-9]*/PORT/g') | head -n 6
    return "${PIPESTATUS[0]}"
}

name="vm-ktls sendfile"
UNTRACED=1 sendfile_run "$name (untraced)" "$d/sf-plain" "$KTLS_CONF"
if sendfile_run "$name" "$d/sf" "$KTLS_CONF"; then
    f=$(facts "$TRACE")
    body=$(tls_size "$d/sf.client.body")
    check "$name: the kernel sent the file (s_server: KTLS SENDFILE OK, TlsTxSw $TX0 -> $TX1), the client got it ($body bytes)" \
        all "grep -q \"KTLS SENDFILE 'f.bin' OK\" $d/sf.log" "[ $TX1 -eq $((TX0 + 1)) ]" \
            "[ $(tls_sha "$d/sf.client.body") = $file_sha ]"
    check "$name: s_server's log and the client's output as without tlsmeter" \
        all "same_log $d/sf-plain.log $d/sf.log" "tls_same_run x $d/sf-plain.client $d/sf.client"
    # SSL_sendfile is a write: its bytes, the ktls entry dir out its first one asked for;
    # the HTTP header went out through the SSL BIO's own SSL_write (inside libssl, no hook).
    check "$name: trace: SSL_sendfile writes add up to the client's $body bytes (and the connection's total), ktls entry dir out (blind event and end), no application record sealed" \
        all "want '$f' written=$body close_wbytes=$body ktls_out=1 end_send_conns=1 app_out=0" \
            "grep -q '\"ev\":\"write\".*\"fn\":\"SSL_sendfile\"' $TRACE"
    run_tool "$A" "$TRACE" >"$d/sf.report" 2>&1
    check "$name: report: encryption moved into the kernel (ktls verdict with the sending figures), never crypto is not the bottleneck" \
        all "sed -n '/^encryption/,\$p' $d/sf.report | grep -q '\[ktls\] .*1 connection of .*sent with kernel TLS (kTLS): encryption moved into the kernel'" \
            "grep -q 'kernel TLS encrypted them (ktls)' $d/sf.report" \
            "! grep -q 'not the bottleneck' $d/sf.report"
fi

name="vm-ktls sendfile without kTLS"
if sendfile_run "$name" "$d/sf-off" ""; then
    f=$(facts "$TRACE")
    check "$name: s_server falls back to its SSL BIO (sendfile needs kTLS), TlsTxSw unchanged, the client got the file, records sealed in the trace ($(fact "$f" app_out) application), no ktls entry" \
        all "grep -q 'sendfile requested but KTLS is not available' $d/sf-off.log" "[ $TX1 -eq $TX0 ]" \
            "[ $(tls_sha "$d/sf-off.client.body") = $file_sha ]" \
            "[ $(fact "$f" app_out) -ge $((SIZE / 16384)) ]" "want '$f' ktls_out=0 end_send_conns=0"
fi

# ---- s_server -WWW without -sendfile: its SSL BIO writes inside libssl (no hooked call) ----
# kTLS on the socket all the same: the kernel encrypts. No write event, no record: the trace
# learns it at SSL_free, from OpenSSL's own BIO state.
name="vm-ktls SSL BIO"
NO_SENDFILE=1 UNTRACED=1 sendfile_run "$name (untraced)" "$d/bio-plain" "$KTLS_CONF"
if NO_SENDFILE=1 sendfile_run "$name" "$d/bio" "$KTLS_CONF"; then
    f=$(facts "$TRACE")
    check "$name: the kernel encrypted (TlsTxSw $TX0 -> $TX1), the client got the file; s_server's log and the client's output as without tlsmeter" \
        all "[ $TX1 -eq $((TX0 + 1)) ]" "[ $(tls_sha "$d/bio.client.body") = $file_sha ]" \
            "same_log $d/bio-plain.log $d/bio.log" "tls_same_run x $d/bio-plain.client $d/bio.client"
    check "$name: trace: ktls entry dir out (blind event and end), found at SSL_free; no application record sealed" \
        want "$f" ktls_out=1 end_send_conns=1 app_out=0
    run_tool "$A" "$TRACE" >"$d/bio.report" 2>&1
    check "$name: report: encryption moved into the kernel, never crypto is not the bottleneck" \
        all "grep -q 'sent with kernel TLS (kTLS): encryption moved into the kernel' $d/bio.report" \
            "! grep -q 'not the bottleneck' $d/bio.report"
fi
