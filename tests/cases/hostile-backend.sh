#!/usr/bin/env bash
# hostile-backend: a TLSMETER_BACKEND_LIB that is no libcrypto file never harms the program:
# a FIFO without writer (blocked the constructor in open() for ever), /dev/zero (copied into
# a memfd without end), a sparse 1 GiB file (copied whole before the ELF check), tlsmeter
# itself (loaded a second tracer: 5 traces, 13 warnings). Each download must finish within
# the run's time bound, byte for byte the plain one, with exactly one `tlsmeter:` warning
# naming the path and why, one trace, and end.reroute.off_reason saying why. The copies run
# under `ulimit -f` so a runaway copy ends with SIGXFSZ instead of filling the machine.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload hostile-backend
if ! tls_mode_ok hw; then
    skip "hostile-backend: $TLS_MODE_SKIP"
    exit 0
fi

BODY=$((256 * 1024 + 5))
tls_make_file c.bin "$BODY"
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "hostile-backend: openssl s_server did not start"
    exit 0
fi
tls_client "$TLS_DL" "$TLS_PORT" c.bin "$d/plain"
if [ "$(cat "$d/plain.rc")" != 0 ]; then
    fail "hostile-backend: $TLS_DL failed without the preload"
    exit 0
fi

mkfifo "$d/fifo"
truncate -s 1G "$d/sparse.so"
# The preload itself (the first non-sanitizer entry of the preload list).
SELF=$(tr ':' '\n' <<<"$TLSM_PRELOAD" | grep 'libtlsmeter\.so$' | head -n 1)

# bad TAG LIB WORD: a download with TLSMETER_CRYPTO=hw TLSMETER_BACKEND_LIB=LIB. WORD (fixed
# text) must be in the one warning and in end.reroute.off_reason.
bad() {
    local name="hostile-backend $1" lib=$2 word=$3 p=$d/$1 warn why
    TLS_ENV=(TLSMETER_CRYPTO=hw TLSMETER_BACKEND_LIB="$lib")
    # 300 MiB of file size at most (a libcrypto is ~5 MiB); 20 s per run.
    (
        ulimit -f 307200
        TLS_RUN_TIMEOUT=20 tls_client "$TLS_DL" "$TLS_PORT" c.bin "$p" "$p.trace.%p.jsonl"
    )
    TLS_ENV=()
    warn=$(grep '^tlsmeter:' "$p.err")
    tls_traces "$p.trace.*.jsonl"
    if [ "$(cat "$p.rc")" -ge 124 ]; then
        fail "$name: the download was killed (exit $(cat "$p.rc"): hang or runaway copy)"
    elif ! why=$(tls_same_run "$name" "$d/plain" "$p"); then
        fail "$name: $why"
    elif [ "$(tls_notes "$p.err")" -ne 1 ]; then
        fail "$name: $(tls_notes "$p.err") tlsmeter lines, want 1: $(head -c 300 <<<"$warn")"
    elif [[ $warn != *"$lib"* || $warn != *"$word"* ]]; then
        fail "$name: the warning does not name '$lib' and '$word': $warn"
    elif [ "${#TRACES[@]}" -ne 1 ]; then
        fail "$name: ${#TRACES[@]} trace files, want 1"
    else
        tls_trace_check "$name" "${TRACES[0]}" --got "$(cat "$p.got")" --body "$BODY" \
            --full-read --conns 1 --path native --reroute mode=hw --reroute routed=0 \
            --reroute "off_reason~$(sed 's/[][\.*^$+?(){}|/]/\\&/g' <<<"$word")"
    fi
}

bad fifo-no-block "$d/fifo" "not a regular file"
bad dev-zero-no-copy /dev/zero "not a regular file"
bad huge-file-no-copy "$d/sparse.so" "larger than"
if [ -n "$SELF" ] && [ -f "$SELF" ]; then
    bad self-refused "$SELF" "tlsmeter itself"
    cp "$SELF" "$d/renamed.so"
    bad self-copy-refused "$d/renamed.so" "tlsmeter itself"
else
    skip "hostile-backend self-refused: no libtlsmeter.so in TLSM_PRELOAD ($TLSM_PRELOAD)"
fi
tls_server_stop
rm -f "$d/fifo" "$d/sparse.so"
