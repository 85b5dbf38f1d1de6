#!/usr/bin/env bash
# fleet-prometheus: a host's tlsmeter counters through the real Debian 12 node exporter (its
# textfile collector) and Prometheus 2.42, both on loopback on free ports, stopped by PID.
# Programs traced in summary mode (1 s snapshots) into one directory while
# `tlsmeter-analyze --openmetrics --textfile DIR --every 1` keeps DIR/tlsmeter.prom:
#   - curl downloading 24 MiB on hardware AES (rate-limited: snapshots while Prometheus scrapes);
#   - curl downloading 16 MiB held to table AES (scripts/tlsmeter-mask.sh's mask), its trace
#     in JSON Lines (the companion reads the two formats live);
#   - Python uploading 16 MiB (the encrypting side);
#   - our C client started four times in a row, the first run's trace moved out of the
#     directory once counted (a cleanup: its counts must stay).
# After the programs' last snapshot and one more scrape, Prometheus's HTTP API gives per
# program, direction and class the records, crypto time and bytes that tlsmeter-analyze
# --json gives over the same traces (within 0.1 %, tests/tools/fleetcheck.py); the bytes the
# programs themselves counted (curl's files, the client's log, the server's upload count); no
# counter ever went down (every scrape of the run, and Prometheus's own resets()); the file
# passes `promtool check metrics`, is 0644 and its state 0600; a desk run of --openmetrics
# over the same traces gives the same counters.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=tests/lib-prom.sh
. "$TLSM_TOP/tests/lib-prom.sh"
# shellcheck source=scripts/tlsmeter-mask.sh
. "$TLSM_TOP/scripts/tlsmeter-mask.sh"
N=fleet-prometheus
d=$(case_dir)
tls_init "$d"
tls_need_preload "$N"
A=$O/tlsmeter-analyze
prom_need "$N" || exit 0
if ! tls_curl_ok; then
    skip "$N: $TLS_CURL_SKIP"
    exit 0
fi
tr=$d/traces tf=$d/textfile moved=$d/moved
mkdir -p "$tr" "$tf" "$moved"
tls_make_file big.bin $((24 << 20))
tls_make_file mid.bin $((16 << 20))
tls_make_file small.bin $((2 << 20))
head -c $((16 << 20)) /dev/urandom >"$d/upload.bin"
# One s_server per client: s_server -WWW serves one connection at a time, and a download
# waiting for another would run in one burst at the end, with no snapshot while it ran.
declare -A port
for who in hw table re; do
    tls_server_start 1.3 TLS_AES_128_GCM_SHA256 || {
        fail "$N: no s_server"
        exit 0
    }
    port[$who]=$TLS_PORT
done
tls_hashserver_start "$d" "$N" || exit 0 # (sets TLS_PORT to its own)
# The alerting rules docs/fleet.md gives, evaluated every second.
check "$N: promtool check rules docs/fleet-rules.yml" "$PROM_BIN_DIR/promtool" check rules "$TLSM_TOP/docs/fleet-rules.yml"
PROM_RULES=$TLSM_TOP/docs/fleet-rules.yml
if ! prom_node_exporter_start "$d" "$tf" || ! prom_server_start "$d" 1s; then
    fail "$N: $PROM_WHY"
    exit 0
fi

# The companion, as a host would run it (docs/fleet.md), never under the preload.
env -u LD_PRELOAD "$A" --openmetrics --textfile "$tf" --every 1 "$tr" 2>"$d/companion.err" &
COMP=$!
TLS_PIDS+=("$COMP")
T0=$(date +%s.%N)

TLS_ENV=(TLSMETER_EVENTS=summary TLSMETER_INTERVAL=1)
TLS_KEEP_FORMAT=1 # the traces stay as written: the companion reads them live
TLS_RUN_TIMEOUT=90
(tls_run "$d/hw" "$tr/" curl -sS --limit-rate 6M --cacert "$TLS_CERT" -D "$d/hw.hdr" \
    -o "$d/hw.body" "https://127.0.0.1:${port[hw]}/big.bin") &
p_hw=$!
(
    # Its trace in JSON Lines (format 1): read whole at every update, the other format.
    TLS_ENV+=("OPENSSL_ia32cap=$TLSM_IA32_SOFT_MASK" TLSMETER_FORMAT=jsonl)
    tls_run "$d/table" "$tr/" curl -sS --limit-rate 6M --cacert "$TLS_CERT" -D "$d/table.hdr" \
        -o "$d/table.body" "https://127.0.0.1:${port[table]}/mid.bin"
) &
p_table=$!
(tls_run "$d/up" "$tr/" "$TLSM_PY" "$TLSM_TOOLS/pyupload.py" --port "$PORT" \
    --cafile "$TLS_CERT" --file "$d/upload.bin") &
p_up=$!
# The restarting program: four runs in a row; the first one's trace leaves the directory
# once the companion has counted it and Prometheus has scraped that.
got_re=0
for i in 1 2 3 4; do
    tls_run "$d/re$i" "$tr/restart$i.%p.trace" "$TLSM_PROGS/mtclient" -p "${port[re]}" \
        -c "$TLS_CERT" -t 1 -n 1 -o "$d/re$i.body" /small.bin
    got_re=$((got_re + $(sed -n 's/.*got=\([0-9]*\).*/\1/p' "$d/re$i.out" | head -n 1)))
    [ "$(cat "$d/re$i.rc")" = 0 ] || fail "$N: client run $i exit $(cat "$d/re$i.rc"): $(head -c 200 "$d/re$i.err")"
    if [ "$i" = 1 ]; then
        first=$(cd "$tr" && echo restart1.*.trace)
        sleep 2.5
        prom_wait_scrape_after "$(date +%s.%N)"
        [ -f "$tr/$first" ] && mv "$tr/$first" "$moved/"
    fi
done
wait "$p_hw" "$p_table" "$p_up"
T_DONE=$(date +%s.%N)

for p in hw table up; do
    check "$N $p: exit 0" test "$(cat "$d/$p.rc")" = 0
done
check "$N curl (hardware): body intact" test "$(tls_sha "$d/hw.body")" = "$(tls_sha "$TLS_WWW/big.bin")"
check "$N curl (table): body intact" test "$(tls_sha "$d/table.body")" = "$(tls_sha "$TLS_WWW/mid.bin")"
check "$N upload: the server got it intact" grep -q "sha256=$(tls_sha "$d/upload.bin") bytes=$((16 << 20))" "$d/server.log"
check "$N restarts: a trace moved out after the first run" test -n "$first" -a -f "$moved/$first"

# The companion's first update after the last program ended, then a scrape after it.
last_update() { sed -n 's/^tlsmeter_last_update_timestamp_seconds //p' "$tf/tlsmeter.prom" 2>/dev/null; }
for _ in $(seq 100); do
    u=$(last_update)
    [ -n "$u" ] && awk -v u="$u" -v t="$T_DONE" 'BEGIN { exit !(u > t) }' && break
    sleep 0.1
done
check "$N: the companion wrote after the programs ended" awk -v u="$(last_update)" -v t="$T_DONE" 'BEGIN { exit !(u > t) }'
check "$N: Prometheus scraped it after that" prom_wait_scrape_after "$(last_update)"

cm=$(basename "$TLSM_PY" | cut -c1-15)
check "$N: Prometheus = tlsmeter-analyze --json per program, direction and class; docs/fleet.md's PromQL" \
    "$TLSM_PY" "$TLSM_TOOLS/fleetcheck.py" --port "$PROM_PORT" --analyzer "$A" \
    --docs "$TLSM_TOP/docs/fleet.md" \
    --expect curl:in:hardware --expect curl:in:table --expect "$cm:out:hardware" \
    --expect mtclient:in:hardware "$tr"/* "$moved"/*
"$TLSM_PY" "$TLSM_TOOLS/fleetcheck.py" --port "$PROM_PORT" --analyzer "$A" \
    --docs "$TLSM_TOP/docs/fleet.md" "$tr"/* "$moved"/* >"$d/fleetcheck.log" 2>&1

# The alert fires for the program whose copy decrypted in software, and for no other.
firing='ALERTS{alertname="TLSDecryptingInSoftware",alertstate="firing"}'
prom_tool wait "count($firing)" --min 1 --timeout 15 >/dev/null 2>&1
prom_query "$firing" >"$d/alerts.json" 2>&1
check "$N: TLSDecryptingInSoftware fires for curl's copy only ($(tr '\n' ' ' <"$d/alerts.json" | head -c 300))" \
    "$TLSM_PY" -c 'import json, sys
a = [json.loads(l)["labels"] for l in open(sys.argv[1]) if l.startswith("{")]
assert a and {x["program"] for x in a} == {"curl"}, a
assert all("libcrypto" in x["copy"] and x["version"] for x in a), a' "$d/alerts.json"

# The programs' own counts (an instrument apart from tlsmeter).
value() { prom_query "$1" | sed -n 's/.*"value": \([0-9.e+]*\).*/\1/p' | head -n 1; }
same_int() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && b != "" && a + 0 == b + 0) }'; }
curl_got=$(($(tls_size "$d/hw.hdr") + $(tls_size "$d/hw.body") + $(tls_size "$d/table.hdr") + $(tls_size "$d/table.body")))
v=$(value 'sum(tlsmeter_ssl_bytes_total{program="curl",dir="in"})')
check "$N curl: SSL_read bytes $v = curl's headers + bodies $curl_got" same_int "$v" "$curl_got"
v=$(value 'sum(tlsmeter_ssl_bytes_total{program="mtclient",dir="in"})')
check "$N restarts: SSL_read bytes $v = the client's own count over its 4 runs $got_re (one trace moved out)" same_int "$v" "$got_re"
v=$(value 'sum(tlsmeter_traces_total{program="mtclient"})')
check "$N restarts: 4 processes counted ($v)" same_int "$v" 4
up_got=$(($(printf 'RAW %d\n' $((16 << 20)) | wc -c) + (16 << 20)))
v=$(value "sum(tlsmeter_ssl_bytes_total{program=\"$cm\",dir=\"out\"})")
check "$N upload: SSL_write bytes $v = the request the server read $up_got" same_int "$v" "$up_got"

# No counter ever went down: every scrape of the run, then Prometheus's own reset count.
T1=$(date +%s.%N)
check "$N: no counter decreased across the scrapes" prom_tool monotonic --start "$T0" --end "$T1" \
    --step 1 'tlsmeter_.*_total'
prom_tool monotonic --start "$T0" --end "$T1" --step 1 'tlsmeter_.*_total' >"$d/monotonic.log" 2>&1
n="$(tail -n 1 "$d/monotonic.log"), from $T0 to $T1"
echo "  ($n)"
# resets() drops the name: one query per counter family.
v=0
while read -r fam; do
    r=$(value "sum(resets(${fam}[10m]))")
    v=$(awk -v a="$v" -v b="${r:-x}" 'BEGIN { print (b == "x" || a == "x") ? "x" : a + b }')
done < <(sed -n 's/^# TYPE \(tlsmeter_[a-z_]*_total\) counter$/\1/p' "$tf/tlsmeter.prom")
check "$N: Prometheus's resets() over the run is 0 for every counter ($v)" same_int "$v" 0
v=$(value 'node_textfile_scrape_error')
check "$N: the textfile collector read the file (node_textfile_scrape_error $v)" same_int "$v" 0

check "$N: promtool check metrics" promtool_check_metrics "$tf/tlsmeter.prom"
check "$N: tlsmeter.prom is 0644 (the collector's user reads it)" test "$(stat -c %a "$tf/tlsmeter.prom")" = 644
check "$N: the state file is 0600" test "$(stat -c %a "$tf/.tlsmeter-metrics.state")" = 600

# A desk run over the same traces gives the same counters (nothing capped, nothing lost).
counters() { grep -v '^#' "$1" | grep '_total' | sort; }
"$A" --openmetrics "$tr"/* "$moved"/* >"$d/desk.prom" 2>"$d/desk.err"
counters "$tf/tlsmeter.prom" >"$d/fleet.counters"
counters "$d/desk.prom" >"$d/desk.counters"
check "$N: --openmetrics over the traces = the host's counters ($(wc -l <"$d/desk.counters") series)" \
    cmp "$d/fleet.counters" "$d/desk.counters"

# The companion stops on TERM, at once and cleanly.
kill "$COMP"
for _ in $(seq 50); do
    kill -0 "$COMP" 2>/dev/null || break
    sleep 0.1
done
wait "$COMP"
rc=$?
check "$N: the companion stopped on TERM with exit 0 (exit $rc; stderr: $(head -c 200 "$d/companion.err"))" test "$rc" = 0
