#!/usr/bin/env bash
# reroute-threads: mtclient, 8 threads x 20 sequential connections of different sizes, with
# TLSMETER_CRYPTO=hw and =soft (shadow contexts made, keyed and dropped concurrently). Every
# connection's body must have its file's sha256, and every record must be on the chosen path.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload reroute-threads

THREADS=8
CONNS=20
SIZES=(0 1 1000 16384 16385 100003 262147)
PATHS=()
for s in "${SIZES[@]}"; do
    tls_make_file "f$s.bin" "$s"
    PATHS+=("/f$s.bin")
done

for s in "1.3 TLS_AES_128_GCM_SHA256" "1.3 TLS_CHACHA20_POLY1305_SHA256" \
    "1.2 ECDHE-RSA-AES256-GCM-SHA384"; do
    read -r proto suite <<<"$s"
    if ! tls_server_start "$proto" "$suite"; then
        fail "reroute-threads $suite: openssl s_server did not start"
        continue
    fi
    for mode in hw soft; do
        name="reroute-threads $mode $suite"
        if ! tls_mode_ok "$mode"; then
            skip "$name: $TLS_MODE_SKIP"
            continue
        fi
        p=$d/mt.$mode.$suite why=
        TLS_ENV=("TLSMETER_CRYPTO=$mode")
        tls_run "$p" "$p.trace.%p.jsonl" "$TLSM_PROGS/mtclient" -p "$TLS_PORT" -c "$TLS_CERT" \
            -t "$THREADS" -n "$CONNS" "${PATHS[@]}"
        TLS_ENV=()
        tls_traces "$p.trace.*.jsonl"
        if [ "$(cat "$p.rc")" != 0 ] || ! why=$(tls_mt_ok "$p.out" $((THREADS * CONNS))); then
            fail "$name: exit $(cat "$p.rc"): ${why:-} $(head -c 200 "$p.err")"
        elif [ "$(tls_notes "$p.err")" -ne 0 ]; then
            fail "$name: tlsmeter said: $(grep '^tlsmeter:' "$p.err" | head -n 2)"
        elif [ "${#TRACES[@]}" -ne 1 ]; then
            fail "$name: ${#TRACES[@]} trace files, want 1"
        else
            tls_trace_check "$name" "${TRACES[0]}" --mt-report "$p.out" --full-read \
                --tls "$proto" --conns $((THREADS * CONNS)) --closed --path "$mode" \
                --reroute 'routed>0' --reroute fallback=0 --reroute shadow_fail=0
        fi
    done
    tls_server_stop
done
