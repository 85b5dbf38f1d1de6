#!/usr/bin/env bash
# analyze-perfetto: --perfetto FILE writes Perfetto's protobuf trace, decoded here with a real
# protobuf decoder (`protoc --decode` against tests/tools/perfetto_subset.proto, the messages
# written from Perfetto's documentation): one process track per trace, one thread track per
# thread, one slice per record and per read on the right thread track with the event's
# duration and connection (tests/tools/perfetto_check.py). Inputs: two golden traces (three
# threads, two processes) and a live multi-threaded download. Also: the text report is still
# written beside it, and --perfetto with --chrome or to an unwritable path is refused.
# tlsm-arch: x86_64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
A=$O/tlsmeter-analyze
g=$TLSM_TOP/tests/golden
T=$TLSM_TOP/tests/tools
"$TLSM_TOP/scripts/install-deps" --extra protobuf-compiler >/dev/null 2>&1
if ! command -v protoc >/dev/null; then
    skip "analyze-perfetto: protoc (protobuf-compiler) could not be installed"
    exit 0
fi

# decoded_ok NAME PB TRACE...: protoc decodes PB and every slice matches the traces' events.
decoded_ok() {
    local name=$1 pb=$2 out
    shift 2
    if ! protoc --proto_path="$T" --decode=perfetto.protos.Trace "$T/perfetto_subset.proto" \
        <"$pb" >"$pb.txt" 2>"$pb.err"; then
        fail "$name: protoc cannot decode it: $(head -c 300 "$pb.err")"
    elif out=$(python3 "$T/perfetto_check.py" "$pb.txt" "$@" 2>&1); then
        pass "$name: $out"
    else
        fail "$name: $out"
    fi
}

"$A" --perfetto "$d/g.pb" "$g/threads.jsonl" "$g/hw.jsonl" >"$d/g.txt" 2>"$d/g.err"
rc=$?
if [ "$rc" = 0 ] && grep -q '^crypto' "$d/g.txt"; then
    pass "analyze-perfetto: exit 0 and the text report beside the file"
else
    fail "analyze-perfetto: rc $rc, report: $(head -c 200 "$d/g.txt") $(head -c 200 "$d/g.err")"
fi
decoded_ok "analyze-perfetto goldens" "$d/g.pb" "$g/threads.jsonl" "$g/hw.jsonl"

expect_usage() { # NAME ARGS...: exit 2 (usage), nothing written
    local name=$1 rc
    shift
    "$A" "$@" >/dev/null 2>&1
    rc=$?
    if [ "$rc" = 2 ]; then pass "$name: refused (usage)"; else fail "$name: rc $rc, want 2"; fi
}
expect_usage "analyze-perfetto with --chrome" --chrome --perfetto "$d/x.pb" "$g/hw.jsonl"
"$A" --perfetto "$d/no/such/dir.pb" "$g/hw.jsonl" >/dev/null 2>"$d/e.err"
rc=$?
if [ "$rc" = 1 ] && grep -q 'no/such/dir.pb' "$d/e.err"; then
    pass "analyze-perfetto: an unwritable path: exit 1, named"
else
    fail "analyze-perfetto unwritable path: rc $rc: $(head -c 200 "$d/e.err")"
fi

# Live: 3 threads x 4 connections from a real s_server, traced.
tls_init "$d"
tls_need_preload analyze-perfetto
tls_make_file big.bin 300000
if tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    tls_run "$d/mt" "$d/mt.%p.jsonl" "$TLSM_PROGS/mtclient" -p "$TLS_PORT" -c "$TLS_CERT" -t 3 \
        -n 4 /big.bin
    tls_server_stop
    trace=$(ls "$d"/mt.*.jsonl 2>/dev/null | head -n 1)
    if [ -z "$trace" ]; then
        fail "analyze-perfetto live: no trace written"
    else
        "$A" --perfetto "$d/live.pb" "$trace" >/dev/null 2>"$d/live.err"
        decoded_ok "analyze-perfetto live (3 threads)" "$d/live.pb" "$trace"
    fi
else
    fail "analyze-perfetto live: openssl s_server did not start"
fi
rm -rf "$d"
