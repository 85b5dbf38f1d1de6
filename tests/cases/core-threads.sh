#!/usr/bin/env bash
# core-threads: mtclient, 8 threads x 20 sequential connections of different sizes. Every read
# and record must sit on the right thread and connection, and each connection's bytes in the
# trace must equal what mtclient read on it, in order, per thread. Under qemu: 4 x 6.
# tlsm-arch: x86_64 aarch64
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload core-threads

THREADS=8
CONNS=20
# Emulated AES-GCM runs at tens of MB/s: 24 connections (~2 MB) per run keep it quick.
under_qemu && THREADS=4 CONNS=6
# Sizes around the record cap, an empty body, and a few multi-record ones: every connection
# of a thread differs from its neighbours, so a misattributed read changes the sequence.
SIZES=(0 1 1000 16339 16340 16384 16385 50001 100003 262147 333333)
PATHS=()
for s in "${SIZES[@]}"; do
    tls_make_file "f$s.bin" "$s"
    PATHS+=("/f$s.bin")
done

# The run's stdout without the thread ids, sorted: the same with and without the preload.
stable() {
    sed 's/ tid=[0-9]*//' "$1" | sort
}

for s in "1.3 TLS_AES_128_GCM_SHA256 AES-128-GCM" "1.2 ECDHE-RSA-AES128-GCM-SHA256 AES-128-GCM"; do
    read -r proto suite cipher <<<"$s"
    name="core-threads $suite"
    p=$d/mt.$suite
    if ! tls_server_start "$proto" "$suite"; then
        fail "$name: openssl s_server did not start"
        continue
    fi
    tls_run "$p.plain" "" "$TLSM_PROGS/mtclient" -p "$TLS_PORT" -c "$TLS_CERT" -t "$THREADS" \
        -n "$CONNS" "${PATHS[@]}"
    tls_run "$p.traced" "$p.trace.%p.jsonl" "$TLSM_PROGS/mtclient" -p "$TLS_PORT" \
        -c "$TLS_CERT" -t "$THREADS" -n "$CONNS" "${PATHS[@]}"
    tls_server_stop
    if ! why=$(tls_mt_ok "$p.plain.out" $((THREADS * CONNS))); then
        fail "$name: without the preload: $why"
        continue
    fi
    if ! why=$(tls_mt_ok "$p.traced.out" $((THREADS * CONNS))); then
        fail "$name: with the preload: $why $(head -c 200 "$p.traced.err")"
        continue
    fi
    if [ "$(cat "$p.plain.rc")" != "$(cat "$p.traced.rc")" ] ||
        [ "$(stable "$p.plain.out")" != "$(stable "$p.traced.out")" ]; then
        fail "$name: mtclient output or exit code differs with the preload"
        continue
    fi
    tls_traces "$p.trace.*.jsonl"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "$name: ${#TRACES[@]} trace files, want 1"
        continue
    fi
    got=$(awk '/^conn /{for (i = 2; i <= NF; i++) if ($i ~ /^got=/) s += substr($i, 5)} END{print s + 0}' \
        "$p.traced.out")
    tls_trace_check "$name" "${TRACES[0]}" --mt-report "$p.traced.out" --got "$got" --full-read \
        --cipher "$cipher" --tls "$proto" --proto "TLSv$proto" --suite "$suite" \
        --conns $((THREADS * CONNS)) --closed
done
