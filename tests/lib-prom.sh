# tests/lib-prom.sh: Debian 12's real Prometheus 2.42 and node exporter 1.5 on loopback, for the
# cases that check what Prometheus makes of tlsmeter's metrics. Source after tests/lib.sh and
# tests/lib-tls.sh. The programs come from scripts/prometheus-tools (the bookworm .deb files
# unpacked into ${TLSM_CACHE:-~/.cache/tlsmeter}, nothing installed); both servers listen on
# 127.0.0.1 on free ports, never under the preload, and are stopped by PID at exit (TLS_PIDS,
# which tls_cleanup stops).
# shellcheck shell=bash disable=SC2034
# (SC2034: the globals here are used by the cases that source this file)
#
#   prom_need NAME                     the programs (PROM_BIN_DIR), or a skip naming why, return 1
#   prom_node_exporter_start DIR TEXTFILE_DIR
#                                      node exporter with the textfile collector only; sets
#                                      NODE_PORT, NODE_PID (log DIR/node-exporter.log)
#   prom_server_start DIR SCRAPE_INTERVAL
#                                      Prometheus scraping it (job "node"; rules evaluated at
#                                      the same interval from PROM_RULES, a file, when set), up once the first
#                                      scrape has succeeded; sets PROM_PORT, PROM_PID (config
#                                      DIR/prometheus.yml, data DIR/data, log DIR/prometheus.log)
#   prom_query EXPR [--time T]         the instant query's samples, JSON lines
#                                      {"labels": {...}, "value": V}
#   prom_wait_scrape_after T           bounded wait (15 s) for a scrape that started after unix
#                                      time T (take T after the textfile changed)
#   promtool_check_metrics FILE        promtool check metrics < FILE: its output, its status
#   prom_tool ARGS...                  tests/tools/promquery.py ARGS --port $PROM_PORT
#                                      (monotonic, wait: see that file)
# The start functions return 1 with the reason in PROM_WHY (the case fails or skips with it).
#
# The node exporter's textfile collector reads every *.prom file of TEXTFILE_DIR at each
# scrape. A file it cannot parse is dropped whole and logged ("failed to collect textfile
# data"... in DIR/node-exporter.log), and its own metric node_textfile_scrape_error (1: some
# file failed, 0: all read) says so: prom_query node_textfile_scrape_error. Write the files
# atomically (a temporary file in the same directory, then mv) so a scrape never reads half.

declare -p TLS_PIDS >/dev/null 2>&1 || {
    echo "tests/lib-prom.sh: source tests/lib-tls.sh first (TLS_PIDS, tls_free_port)" >&2
    exit 1
}

PROM_TIMEOUT=${PROM_TIMEOUT:-10} # seconds for a server to answer
PROM_SCRAPE_TIMEOUT=${PROM_SCRAPE_TIMEOUT:-15}
PROM_JOB=node

# prom_need NAME: scripts/prometheus-tools (its output in $TLSM_WORK/NAME-prom.log); sets
# PROM_ROOT (the unpacked packages) and PROM_BIN_DIR. Skips NAME and returns 1 when the
# programs cannot be had, and under qemu or in another userland (these are the host's).
prom_need() {
    local name=$1 log=$TLSM_WORK/$1-prom.log b
    if under_qemu || in_userland; then
        skip "$name: Debian 12's Prometheus runs on the host, not under qemu or another userland"
        return 1
    fi
    if ! "$TLSM_TOP/scripts/prometheus-tools" >"$log" 2>&1; then
        skip "$name: scripts/prometheus-tools failed (no Debian 12 Prometheus packages): $(tail -n 2 "$log" | tr '\n' ' ')"
        return 1
    fi
    PROM_ROOT=$(tail -n 1 "$log")
    PROM_BIN_DIR=$PROM_ROOT/usr/bin
    for b in prometheus promtool prometheus-node-exporter; do
        if [ ! -x "$PROM_BIN_DIR/$b" ]; then
            skip "$name: no $PROM_BIN_DIR/$b after scripts/prometheus-tools (see $log)"
            return 1
        fi
    done
}

# prom_tool ARGS...: tests/tools/promquery.py SUBCOMMAND --port $PROM_PORT ARGS.
prom_tool() {
    local cmd=$1
    shift
    "$TLSM_PY" "$TLSM_TOOLS/promquery.py" "$cmd" --port "$PROM_PORT" "$@"
}

# prom_ready PORT PATH PID: bounded wait ($PROM_TIMEOUT s) until http://127.0.0.1:PORT/PATH
# answers 200, as long as PID lives.
prom_ready() {
    "$TLSM_PY" "$TLSM_TOOLS/promquery.py" ready --port "$1" --path "$2" --pid "$3" \
        --timeout "$PROM_TIMEOUT"
}

# prom_spawn LOG PROG ARGS...: PROG in the background, without the preload or the case's
# library path (a Go program linked with libc only); PROM_SPAWNED is its PID, in TLS_PIDS.
prom_spawn() {
    local log=$1
    shift
    env -u LD_PRELOAD -u LD_LIBRARY_PATH "$@" >"$log" 2>&1 </dev/null &
    PROM_SPAWNED=$!
    TLS_PIDS+=("$PROM_SPAWNED")
}

# prom_start_retry WHAT LOG PATH ARGS...: start a server (ARGS, with @PORT@ replaced by a free
# port) and wait for PATH; up to 5 ports when another process took ours first (the log says
# "address already in use"). Sets PROM_STARTED_PORT and PROM_STARTED_PID, or PROM_WHY.
prom_start_retry() {
    local what=$1 log=$2 path=$3 port a args
    shift 3
    PROM_WHY=
    for _ in 1 2 3 4 5; do
        port=$(tls_free_port)
        args=()
        for a in "$@"; do args+=("${a//@PORT@/$port}"); done
        prom_spawn "$log" "${args[@]}"
        if prom_ready "$port" "$path" "$PROM_SPAWNED" 2>>"$log.wait"; then
            PROM_STARTED_PORT=$port
            PROM_STARTED_PID=$PROM_SPAWNED
            rm -f "$log.wait"
            return 0
        fi
        tls_stop_pid "$PROM_SPAWNED"
        grep -q 'address already in use' "$log" || break
    done
    PROM_WHY="$what did not answer on 127.0.0.1:$port$path: $(tail -n 1 "$log.wait" 2>/dev/null) $(grep -v 'level=info' "$log" | tail -n 3 | tr '\n' ' ')"
    return 1
}

# prom_node_exporter_start DIR TEXTFILE_DIR: prometheus-node-exporter on 127.0.0.1 with only
# the textfile collector reading TEXTFILE_DIR; returns once /metrics answers. Sets NODE_PORT
# and NODE_PID.
prom_node_exporter_start() {
    local dir=$1 tdir=$2
    mkdir -p "$tdir"
    prom_start_retry "prometheus-node-exporter" "$dir/node-exporter.log" /metrics \
        "$PROM_BIN_DIR/prometheus-node-exporter" --web.listen-address=127.0.0.1:@PORT@ \
        --collector.disable-defaults --collector.textfile \
        --collector.textfile.directory="$tdir" || return 1
    NODE_PORT=$PROM_STARTED_PORT
    NODE_PID=$PROM_STARTED_PID
}

# prom_server_start DIR SCRAPE_INTERVAL: prometheus on 127.0.0.1 scraping the node exporter
# ($NODE_PORT, job "node") every SCRAPE_INTERVAL (such as 1s; rules evaluated as often), its
# data in DIR/data. Returns once /-/ready answers and the first scrape succeeded (up == 1).
# Debian's build reads its web UI from --web.local-assets and consoles from /etc/prometheus:
# pointed at the unpacked copies, so nothing of the host's is read (the API needs neither).
# Sets PROM_PORT and PROM_PID. About 5.5 s (5.2 to 6.2 measured): ready in 0.1 s, but 2.42
# hands its first targets to the scrape manager only at a fixed 5 s tick (no flag changes it),
# then the first scrape waits for the target's offset within SCRAPE_INTERVAL.
prom_server_start() {
    local dir=$1 interval=$2
    : "${NODE_PORT:?prom_server_start: start the node exporter first}"
    cat >"$dir/prometheus.yml" <<EOF
global:
  scrape_interval: $interval
  evaluation_interval: $interval
rule_files: [${PROM_RULES:+"$PROM_RULES"}]
scrape_configs:
  - job_name: $PROM_JOB
    static_configs:
      - targets: ["127.0.0.1:$NODE_PORT"]
EOF
    rm -rf "$dir/data"
    prom_start_retry prometheus "$dir/prometheus.log" /-/ready \
        "$PROM_BIN_DIR/prometheus" --config.file="$dir/prometheus.yml" \
        --storage.tsdb.path="$dir/data" --web.listen-address=127.0.0.1:@PORT@ \
        --web.local-assets="$PROM_ROOT/usr/share/prometheus/web/" \
        --web.console.templates="$PROM_ROOT/etc/prometheus/consoles" \
        --web.console.libraries="$PROM_ROOT/etc/prometheus/console_libraries" || return 1
    PROM_PORT=$PROM_STARTED_PORT
    PROM_PID=$PROM_STARTED_PID
    if ! prom_tool wait "up{job=\"$PROM_JOB\"}" --min 1 --timeout "$PROM_SCRAPE_TIMEOUT" \
        >/dev/null 2>"$dir/prometheus.up"; then
        PROM_WHY="prometheus never scraped the node exporter (127.0.0.1:$NODE_PORT): $(tail -n 1 "$dir/prometheus.up")"
        return 1
    fi
}

# prom_query EXPR [--time T]: the instant query's samples, one JSON line each.
prom_query() {
    prom_tool query "$@"
}

# prom_wait_scrape_after T: true once Prometheus holds a scrape of the node exporter that
# started after unix time T (seconds, decimals allowed): one that read the textfiles as they
# were at T. Bounded ($PROM_SCRAPE_TIMEOUT s); returns 1 on timeout.
prom_wait_scrape_after() {
    prom_tool wait "timestamp(up{job=\"$PROM_JOB\"}) > $1" --min "$1" \
        --timeout "$PROM_SCRAPE_TIMEOUT" >/dev/null
}

# promtool_check_metrics FILE: Debian's promtool lints FILE as an exposition (exit 0: clean;
# it also fails on lint problems such as a counter without _total or a missing HELP).
promtool_check_metrics() {
    "$PROM_BIN_DIR/promtool" check metrics <"$1" 2>&1
}
