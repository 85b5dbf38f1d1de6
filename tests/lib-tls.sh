# tests/lib-tls.sh: real TLS peers on loopback for the core tests: a generated certificate and
# files, `openssl s_server -WWW` on a free port (stopped by PID), clients run with and
# without the preload. Source after tests/lib.sh; call tls_init "$d" first.
# shellcheck shell=bash disable=SC2034
# (SC2034: the globals here are used by the cases that source this file)

# Python whose ssl module uses the system libssl.so.3 (the one the preload hooks). The Debian
# interpreter comes first: a pyenv or venv python may carry its own OpenSSL build.
tls_pick_python() {
    local py
    for py in /usr/bin/python3 "$(command -v python3 2>/dev/null)"; do
        [ -x "$py" ] || continue
        if "$py" -c 'import ssl, sys
maps = open("/proc/self/maps").read()
sys.exit(0 if any(l.split()[-1].startswith(("/usr/lib/", "/lib/")) and "libssl.so.3" in l
                  for l in maps.splitlines() if "/" in l) else 1)' 2>/dev/null; then
            echo "$py"
            return 0
        fi
    done
    return 1
}
TLSM_PY=${TLSM_PY:-$(tls_pick_python || command -v python3)}
TLSM_TOOLS=$TLSM_TOP/tests/tools
TLSM_PROGS=$O/tests

# The suites of the core matrix: "proto suite evp-cipher".
TLS_SUITES=(
    "1.3 TLS_AES_128_GCM_SHA256 AES-128-GCM"
    "1.3 TLS_AES_256_GCM_SHA384 AES-256-GCM"
    "1.3 TLS_CHACHA20_POLY1305_SHA256 ChaCha20-Poly1305"
    "1.2 ECDHE-RSA-AES128-GCM-SHA256 AES-128-GCM"
    "1.2 ECDHE-RSA-AES256-GCM-SHA384 AES-256-GCM"
)

TLS_PIDS=()
TLS_RESULTS_START=$(wc -l <"$TLSM_RESULTS" 2>/dev/null || echo 0)

# tls_stop_pid PID: TERM, a bounded wait, then KILL. Only PIDs this case started are passed.
tls_stop_pid() {
    local pid=$1
    kill -0 "$pid" 2>/dev/null || return 0
    kill "$pid" 2>/dev/null
    for _ in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return 0
}

# On exit: stop every server and proxy we started; drop the work directory unless this case
# failed (then its traces and logs stay for a look).
tls_cleanup() {
    local pid
    for pid in "${TLS_PIDS[@]}"; do
        tls_stop_pid "$pid"
    done
    TLS_PIDS=()
    [ -n "${TLS_EXTRA_CLEANUP:-}" ] && eval "$TLS_EXTRA_CLEANUP"
    [ -n "${TLS_NB_TMP:-}" ] && rm -rf "$TLS_NB_TMP"
    if [ -n "${TLS_DIR:-}" ] && [ -d "$TLS_DIR" ]; then
        if [ -n "${TLSM_KEEP:-}" ]; then
            echo "  (kept $TLS_DIR: TLSM_KEEP)"
        elif tail -n +"$((TLS_RESULTS_START + 1))" "$TLSM_RESULTS" | grep -q '^FAIL'; then
            find "$TLS_DIR" -type f -size +1M -delete 2>/dev/null
            echo "  (kept $TLS_DIR)"
        else
            rm -rf "$TLS_DIR"
        fi
    fi
}
trap tls_cleanup EXIT
trap 'exit 143' TERM INT

# tls_init DIR: the case's work directory; generates a fresh RSA-2048 certificate for
# localhost/127.0.0.1/::1 (never checked in) and a docroot DIR/www.
tls_init() {
    TLS_DIR=$1
    TLS_WWW=$TLS_DIR/www
    TLS_CERT=$TLS_DIR/cert.pem
    TLS_KEY=$TLS_DIR/key.pem
    mkdir -p "$TLS_WWW"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
        -addext "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1" \
        -keyout "$TLS_KEY" -out "$TLS_CERT" >/dev/null 2>&1
    TLS_DL=curl
    tls_curl_ok || TLS_DL=tlsget
}

# Under an ASAN build the sanitizer runtime is preloaded into every traced program, and curl
# (7.88) deadlocks at its first transfer with libasan preloaded: a futex wait before any
# connect, with or without tlsmeter. tls_curl_ok tells (a 5 s probe, SAN runs only); cases
# download with $TLS_DL (curl, else our C client) or skip their curl parts. Under qemu
# (make check-aarch64) there is no curl for the target at all.
tls_curl_ok() {
    local rc
    under_qemu && ! in_userland && return 1
    [ -z "${TLSM_SAN:-}" ] && return 0
    if [ -z "${TLS_CURL_OK:-}" ]; then
        timeout -k 1 5 env LD_PRELOAD="${TLSM_PRELOAD%:*}" curl -sS -o /dev/null \
            http://127.0.0.1:1/ >/dev/null 2>&1
        rc=$?
        TLS_CURL_OK=0
        [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && TLS_CURL_OK=1
    fi
    return "$TLS_CURL_OK"
}
TLS_CURL_SKIP="curl deadlocks with the sanitizer runtime preloaded (not tlsmeter's doing)"
under_qemu && ! in_userland &&
    TLS_CURL_SKIP="no $(target_arch) curl under qemu (the sysroot has s_client and our C clients)"

# tls_client_ok KIND: true when client KIND (see tls_client) can run here; else false with the
# reason in TLS_CLIENT_SKIP. Under qemu only target programs run: the sysroot's s_client and
# our cross-built C clients; curl and Python are host programs there.
tls_client_ok() {
    TLS_CLIENT_SKIP=
    case $1 in
    curl) tls_curl_ok || TLS_CLIENT_SKIP=$TLS_CURL_SKIP ;;
    py)
        under_qemu && ! in_userland && TLS_CLIENT_SKIP="no $(target_arch) Python under qemu (the sysroot has s_client and our C clients)"
        # A case that sets TLS_QEMU_PY_ELSEWHERE=CASE leaves a release's Python under
        # qemu-user to CASE: its start-up is emulated too (CI time, not ability).
        [ -z "$TLS_CLIENT_SKIP" ] && under_qemu && [ -n "${TLS_QEMU_PY_ELSEWHERE:-}" ] &&
            TLS_CLIENT_SKIP="Python under qemu-user is left to $TLS_QEMU_PY_ELSEWHERE (CI time)"
        ;;
    esac
    [ -z "$TLS_CLIENT_SKIP" ]
}

# tls_mode_ok MODE: true when TLSMETER_CRYPTO=MODE can run in this build, else false with the
# reason in TLS_MODE_SKIP. The hw/soft backend is a libcrypto copy loaded RTLD_DEEPBIND
# (preload/reroute/backend.c), and ASan's dlopen dies on RTLD_DEEPBIND ("incompatible with sanitizer
# runtime", google/sanitizers#611). Under ASan builds one probe tells (a small hw download from
# the running server $TLS_PORT, once per case): when the preload learns to load its backend
# there, the reroute checks run again by themselves.
tls_mode_ok() {
    local p=$TLS_DIR/deepbind-probe saved=("${TLS_ENV[@]}")
    TLS_MODE_SKIP=
    [ "$1" = native ] && return 0
    [[ ${TLSM_SAN:-} == *address* ]] || return 0
    if [ -z "${TLS_DEEPBIND_OK:-}" ]; then
        TLS_ENV=(TLSMETER_CRYPTO=hw)
        tls_run "$p" "$p.%p.jsonl" "$TLSM_PROGS/mtclient" -q -p "$TLS_PORT" -c "$TLS_CERT" \
            -t 1 -n 1 -o /dev/null /
        TLS_ENV=("${saved[@]}")
        TLS_DEEPBIND_OK=1
        grep -q RTLD_DEEPBIND "$p.err" && TLS_DEEPBIND_OK=0
        rm -f "$p".*
    fi
    [ "$TLS_DEEPBIND_OK" = 1 ] && return 0
    TLS_MODE_SKIP="ASan's dlopen refuses RTLD_DEEPBIND, which loads the $1 backend"
    TLS_MODE_SKIP+=" (preload/reroute/backend.c; google/sanitizers#611)"
    return 1
}

# tls_need_preload: fail the case (not skip) when the library is missing: the suite exists to
# test it.
tls_need_preload() {
    local f=${TLSM_PRELOAD##*:}
    if [ ! -f "$f" ]; then
        fail "$1: preload not built ($f); run make"
        exit 0
    fi
}

# tls_nobody_dir PROG...: a directory user nobody can reach for the cases that run as nobody
# (a CI checkout may sit under a directory only root can enter). The case dir when nobody can
# read files there, else a fresh directory under /tmp (removed on exit). Holds copies of the
# certificate (TLS_NB_CERT), the library (TLS_NB_PRELOAD: sanitizer runtimes, if any, stay
# where they are) and of each PROG. Sets TLS_NB_DIR.
tls_nobody_dir() {
    local lib=${TLSM_PRELOAD##*:} p
    if setpriv --reuid=nobody --regid=nogroup --clear-groups test -r "$TLS_CERT" 2>/dev/null; then
        TLS_NB_DIR=$TLS_DIR/nobody
        mkdir -p "$TLS_NB_DIR"
    else
        TLS_NB_DIR=$(mktemp -d /tmp/tlsm-test.XXXXXX) || return 1
        TLS_NB_TMP=$TLS_NB_DIR
    fi
    chmod 0755 "$TLS_NB_DIR"
    install -m 0644 "$TLS_CERT" "$TLS_NB_DIR/cert.pem"
    install -m 0755 "$lib" "$TLS_NB_DIR/libtlsmeter.so"
    TLS_NB_CERT=$TLS_NB_DIR/cert.pem
    TLS_NB_PRELOAD=$TLS_NB_DIR/libtlsmeter.so
    [ "$lib" != "$TLSM_PRELOAD" ] && TLS_NB_PRELOAD=${TLSM_PRELOAD%:*}:$TLS_NB_PRELOAD
    for p in "$@"; do
        install -m 0755 "$p" "$TLS_NB_DIR/"
    done
}

# tls_make_file NAME SIZE: random content in the docroot.
tls_make_file() {
    head -c "$2" /dev/urandom >"$TLS_WWW/$1"
}

tls_sha() {
    sha256sum <"$1" | cut -d' ' -f1
}

tls_size() {
    stat -c %s "$1"
}

# A free TCP port on 127.0.0.1 (the kernel picks it; the server retries on a lost race).
tls_free_port() {
    "$TLSM_PY" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# tls_wait_log FILE WORD PID: bounded wait (5 s) for WORD in FILE while PID lives.
tls_wait_log() {
    for _ in $(seq 100); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        kill -0 "$3" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

# tls_hashserver_start DIR NAME: tests/tools/hashserver.py (an upload sink that logs each
# body's length and sha256 to DIR/server.log) on 127.0.0.1 with $TLS_CERT, never under the
# preload; bounded wait (5 s) for its port. Sets PORT and TLS_PORT (for tls_mode_ok's probe);
# on failure a fail line naming NAME and the server's stderr, and returns 1.
tls_hashserver_start() {
    local dir=$1
    "$TLSM_PY" "$TLSM_TOOLS/hashserver.py" --cert "$TLS_CERT" --key "$TLS_KEY" \
        --log "$dir/server.log" >"$dir/server.port" 2>"$dir/server.err" &
    TLS_PIDS+=("$!")
    for _ in $(seq 100); do
        [ -s "$dir/server.port" ] && break
        sleep 0.05
    done
    PORT=$(sed -n 's/^port=//p' "$dir/server.port")
    TLS_PORT=$PORT
    [ -n "$PORT" ] && return 0
    fail "$2: hashserver did not start: $(head -c 300 "$dir/server.err")"
    return 1
}

# tls_need_nginx NAME: the host's nginx for a case that starts it as root (its workers become
# nobody): installed if missing (nginx-light). Returns 1 after a skip saying why not (under
# qemu, not root, not installable); the log of install-deps goes to $TLSM_WORK/NAME-deps.log.
tls_need_nginx() {
    local log=$TLSM_WORK/$1-deps.log
    if under_qemu || in_userland; then
        skip "$1: the host's nginx, not under qemu or another userland"
        return 1
    fi
    if [ "$(id -u)" != 0 ]; then
        skip "$1: needs root (nginx starts as root and its workers become nobody)"
        return 1
    fi
    command -v nginx >/dev/null || "$TLSM_TOP/scripts/install-deps" --extra "nginx-light" >"$log" 2>&1
    if ! command -v nginx >/dev/null; then
        skip "$1: nginx is not installed and install-deps could not install nginx-light: $(tail -n 1 "$log")"
        return 1
    fi
}

# tls_nginx_conf DIR BASE PORT WORKERS LOCATIONS [HTTP_EXTRA]: DIR/BASE.conf for nginx run in
# the foreground from DIR (pid DIR/BASE.pid, error log DIR/BASE.error.log, temp files under
# DIR/tmp), user nobody with its own group (Debian has no group "nobody", nginx's default),
# one TLS 1.3 server on 127.0.0.1:PORT with $TLS_CERT, uploads up to 64 MiB, LOCATIONS inside
# the server block and HTTP_EXTRA (such as "sendfile off;") in the http block.
tls_nginx_conf() {
    local dir=$1 base=$2
    mkdir -p "$dir/tmp"
    cat >"$dir/$base.conf" <<EOF
user nobody $(id -gn nobody);
worker_processes $4;
master_process on;
daemon off;
pid $dir/$base.pid;
error_log $dir/$base.error.log info;
events { worker_connections 64; }
http {
    access_log off;
    ${6:-}
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    server {
        listen 127.0.0.1:$3 ssl;
        ssl_certificate $TLS_CERT;
        ssl_certificate_key $TLS_KEY;
        ssl_protocols TLSv1.3;
        client_max_body_size 64m;
        $5
    }
}
EOF
}

# tls_server_start PROTO SUITE [s_server args...]: openssl s_server -WWW serving $TLS_WWW on
# 127.0.0.1, constrained to PROTO (1.2, 1.3 or any) and SUITE; sets TLS_PORT and TLS_SRV_PID.
# The server never runs under the preload.
tls_server_start() {
    local proto=$1 suite=$2 port pid log
    shift 2
    local opts=()
    case $proto in
    1.3) opts=(-tls1_3 -ciphersuites "$suite") ;;
    1.2) opts=(-tls1_2 -cipher "$suite") ;;
    esac
    for _ in 1 2 3 4 5; do
        port=$(tls_free_port)
        log=$TLS_DIR/server.$port.log
        (cd "$TLS_WWW" && exec env -u LD_PRELOAD openssl s_server -accept "127.0.0.1:$port" \
            -cert "$TLS_CERT" -key "$TLS_KEY" -WWW "${opts[@]}" "$@" </dev/null) >"$log" 2>&1 &
        pid=$!
        TLS_PIDS+=("$pid")
        if tls_wait_log "$log" ACCEPT "$pid"; then
            TLS_PORT=$port
            TLS_SRV_PID=$pid
            return 0
        fi
        tls_stop_pid "$pid"
    done
    echo "tls_server_start: no server after 5 tries; last log:" >&2
    cat "$log" >&2
    return 1
}

# tls_server_stop: stop the last server started.
tls_server_stop() {
    [ -n "${TLS_SRV_PID:-}" ] && tls_stop_pid "$TLS_SRV_PID"
    TLS_SRV_PID=
}

# tls_run OUTPREFIX TRACE CMD...: run CMD with stdout/stderr/exit code in OUTPREFIX.{out,err,rc}.
# TRACE empty: no preload; else TRACE is the TLSMETER_OUT template. Extra environment for the
# traced run comes from the array TLS_ENV (VAR=VALUE words); the array TLS_RUNAS (e.g. setpriv
# ...) goes in front of env, so it never runs under the preload itself; TLS_PRELOAD, when set,
# replaces $TLSM_PRELOAD. Bounded by
# $TLS_RUN_TIMEOUT seconds (a hung run must not eat the whole case's time). Under qemu (make
# check-aarch64) CMD is a target program: run through target_cmd, see tests/lib-qemu.sh.
tls_run() {
    local p=$1 trace=$2 rc pre=()
    shift 2
    if under_qemu || in_userland; then
        # The target's program through qemu or another userland's loader (tests/lib-qemu.sh:
        # a bare name is the root's /usr/bin/NAME, LD_PRELOAD reaches only the program);
        # TLS_RUNAS stays on the host side.
        [ -n "$trace" ] && pre=(LD_PRELOAD="${TLS_PRELOAD:-$TLSM_PRELOAD}" TLSMETER_OUT="$trace"
            "${TLS_ENV[@]}")
        target_cmd "${pre[@]}" "$@"
        timeout -k 5 "$TLS_RUN_TIMEOUT" "${TLS_RUNAS[@]}" "${TARGET_CMD[@]}" >"$p.out" 2>"$p.err"
    elif [ -z "$trace" ]; then
        timeout -k 5 "$TLS_RUN_TIMEOUT" "${TLS_RUNAS[@]}" env -u LD_PRELOAD "$@" \
            >"$p.out" 2>"$p.err"
    else
        timeout -k 5 "$TLS_RUN_TIMEOUT" "${TLS_RUNAS[@]}" \
            env LD_PRELOAD="${TLS_PRELOAD:-$TLSM_PRELOAD}" TLSMETER_OUT="$trace" "${TLS_ENV[@]}" \
            "$@" >"$p.out" 2>"$p.err"
    fi
    rc=$?
    echo "$rc" >"$p.rc"
    # Format 2 traces as JSON Lines for the case's greps (TLS_KEEP_FORMAT=1: as written).
    [ -n "$trace" ] && [ -z "${TLS_KEEP_FORMAT:-}" ] && tlsm_jsonl "$trace"
    return 0
}
TLS_RUNAS=()
TLS_RUN_TIMEOUT=${TLS_RUN_TIMEOUT:-30}
TLS_ENV=()

# tls_client KIND PORT PATH OUTPREFIX [TRACE]: download https://127.0.0.1:PORT/PATH with one of
# the clients (curl, py, sclient, tlsget). Leaves OUTPREFIX.body (the body), OUTPREFIX.got
# (bytes the client read from TLS: HTTP header + body), .rc, .err.
tls_client() {
    local kind=$1 port=$2 path=$3 p=$4 trace=${5-} url="https://127.0.0.1:$2/$3"
    rm -f "$p".*
    case $kind in
    curl)
        tls_run "$p" "$trace" curl -sS --cacert "$TLS_CERT" -D "$p.hdr" -o "$p.body" "$url"
        [ -f "$p.body" ] || : >"$p.body"
        [ -f "$p.hdr" ] || : >"$p.hdr"
        echo $(($(tls_size "$p.hdr") + $(tls_size "$p.body"))) >"$p.got"
        ;;
    py)
        # Another userland's own Python (its ssl module on its libssl), else the host's.
        local py=$TLSM_PY
        in_userland && py=python3
        tls_run "$p" "$trace" "$py" "$TLSM_TOOLS/pyclient.py" --port "$port" \
            --cafile "$TLS_CERT" --path "/$path" --out "$p.body"
        sed -n 's/.*got=\([0-9]*\).*/\1/p' "$p.out" >"$p.got"
        ;;
    sclient)
        # -quiet implies -ign_eof: s_client reads until the server closes. Its stdout is
        # exactly what SSL_read returned: header + body.
        printf 'GET /%s HTTP/1.0\r\n\r\n' "$path" >"$p.req"
        tls_run "$p" "$trace" openssl s_client -connect "127.0.0.1:$port" -quiet \
            -CAfile "$TLS_CERT" -verify_return_error -servername localhost <"$p.req"
        tls_size "$p.out" >"$p.got"
        "$TLSM_PY" -c 'import sys
d = open(sys.argv[1], "rb").read()
i = d.find(b"\r\n\r\n")
open(sys.argv[2], "wb").write(d[i + 4:] if i >= 0 else b"")' "$p.out" "$p.body"
        ;;
    tlsget)
        tls_run "$p" "$trace" "$TLSM_PROGS/mtclient" -p "$port" -c "$TLS_CERT" -t 1 -n 1 \
            -o "$p.body" "/$path"
        sed -i 's/ tid=[0-9]*//' "$p.out" # the thread id differs from run to run
        sed -n 's/.*got=\([0-9]*\).*/\1/p' "$p.out" >"$p.got"
        ;;
    *)
        echo "tls_client: unknown client $kind" >&2
        return 1
        ;;
    esac
    [ -s "$p.got" ] || echo 0 >"$p.got"
}

# tls_proxy_start PROTO: tests/tools/tamper_proxy.py in front of $TLS_PORT (PROTO 1.2 or 1.3:
# it flips one ciphertext byte of the 3rd large response record of each connection; more
# arguments in the array TLS_PROXY_ARGS, e.g. (--nth 0): relay and count only); sets
# PROXY_PORT, PROXY_PID, PROXY_LOG. Stopped with tls_stop_pid "$PROXY_PID" (or at exit).
tls_proxy_start() {
    local pf=$TLS_DIR/proxy.$1.port pid
    PROXY_LOG=$TLS_DIR/proxy.$1.$TLS_PORT.log
    rm -f "$pf"
    "$TLSM_PY" "$TLSM_TOOLS/tamper_proxy.py" --target-port "$TLS_PORT" --tls "$1" \
        --port-file "$pf" --max-conns 32 --timeout 300 ${TLS_PROXY_ARGS[@]+"${TLS_PROXY_ARGS[@]}"} 2>"$PROXY_LOG" &
    pid=$!
    TLS_PIDS+=("$pid")
    PROXY_PID=$pid
    for _ in $(seq 100); do
        [ -s "$pf" ] && break
        sleep 0.05
    done
    PROXY_PORT=$(cat "$pf" 2>/dev/null)
    [ -n "$PROXY_PORT" ]
}

# tls_proxy_flips: how many records the running proxy has flipped so far.
tls_proxy_flips() {
    grep -c flipped "$PROXY_LOG"
}

# tls_mt_ok REPORT N: mtclient's REPORT (its stdout) has N "conn" lines, each ok=1 with the
# sha256 of the file it fetched from $TLS_WWW. Prints the first bad line on failure.
tls_mt_ok() {
    local n=0 path sha line
    while read -r line; do
        path=$(sed -n 's/.* path=\([^ ]*\) .*/\1/p' <<<"$line")
        sha=$(sed -n 's/.* sha256=\([0-9a-f]*\) .*/\1/p' <<<"$line")
        if [ "$sha" != "$(tls_sha "$TLS_WWW$path")" ] || [[ $line != *" ok=1" ]]; then
            echo "bad connection: $line"
            return 1
        fi
        n=$((n + 1))
    done < <(grep '^conn ' "$1")
    [ "$n" -eq "$2" ] || {
        echo "$n connections reported, want $2"
        return 1
    }
}

# tls_traces GLOB: the trace files a run left (sorted), into the array TRACES.
tls_traces() {
    local f
    TRACES=()
    for f in $1; do
        [ -e "$f" ] || [ -L "$f" ] && TRACES+=("$f")
    done
}

# tls_analyzer NAME: A, the analyzer a case runs ($O/tlsmeter-analyze; under qemu a wrapper
# that runs the cross-built one, the board's view, through qemu). Fails NAME and exits the
# case when it is not built.
tls_analyzer() {
    A=$O/tlsmeter-analyze
    if [ ! -x "$A" ]; then
        fail "$1: $A not built; run make"
        exit 0
    fi
    if under_qemu; then
        target_wrapper "$A" "$TLS_DIR/analyze"
        A=$TLS_DIR/analyze
    fi
}

# tls_trace_check NAME TRACE ARGS...: tracecheck.py TRACE ARGS, reported as NAME. Under qemu
# the trace must also come from the target's program (header arch, emulated); in another
# userland its records from that release's OpenSSL.
tls_trace_check() {
    local name=$1 q=()
    shift
    under_qemu && q=(--arch "$(target_arch)" --emulated)
    in_userland && q+=(--openssl "$(ul_openssl)")
    tls_check "$name" "$TLSM_PY" "$TLSM_TOOLS/tracecheck.py" "$@" "${q[@]}"
}

# tls_check NAME CMD...: like check, but keeps the first lines of the failure reasons.
tls_check() {
    local name=$1 out
    shift
    if out=$("$@" 2>&1); then
        pass "$name${TLS_PASS_NOTE:+ ($TLS_PASS_NOTE)}"
    else
        fail "$name: $(echo "$out" | grep -v '^ok ' | head -n 4 | tr '\n' ' ')"
    fi
}

# tls_stderr_minus_notes FILE: stderr without tlsmeter's own lines, and without the thread id
# OpenSSL puts in front of its error lines (s_client: "40C7...0000:error:0A000119:...").
tls_stderr_minus_notes() {
    grep -v '^tlsmeter:' "$1" | sed -E 's/^[0-9A-F]{8,16}:error:/error:/' || true
}

# tls_notes FILE: the number of tlsmeter lines on stderr.
tls_notes() {
    grep -c '^tlsmeter:' "$1"
}

# tls_same_run NAME A B: A and B (output prefixes of two runs) have the same exit code, body,
# stdout and stderr apart from tlsmeter's lines. Prints the difference on failure.
tls_same_run() {
    local a=$2 b=$3
    if [ "$(cat "$a.rc")" != "$(cat "$b.rc")" ]; then
        echo "exit code $(cat "$a.rc") without preload, $(cat "$b.rc") with"
        return 1
    fi
    if [ "$(tls_sha "$a.out")" != "$(tls_sha "$b.out")" ]; then
        echo "stdout differs with preload ($(tls_size "$a.out") vs $(tls_size "$b.out") bytes)"
        return 1
    fi
    if [ -f "$a.body" ] && [ "$(tls_sha "$a.body")" != "$(tls_sha "$b.body")" ]; then
        echo "download differs with preload ($(tls_size "$a.body") vs $(tls_size "$b.body") bytes)"
        return 1
    fi
    if [ "$(tls_stderr_minus_notes "$a.err")" != "$(tls_stderr_minus_notes "$b.err")" ]; then
        echo "stderr differs: $(diff <(tls_stderr_minus_notes "$a.err") \
            <(tls_stderr_minus_notes "$b.err") | head -n 4 | tr '\n' ' ')"
        return 1
    fi
    return 0
}
