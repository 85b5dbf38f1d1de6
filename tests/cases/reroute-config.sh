#!/usr/bin/env bash
# reroute-config: a bad reroute configuration never harms the program. TLSMETER_CRYPTO=bogus,
# TLSMETER_BACKEND_LIB=/nonexistent, =/etc/passwd (not a library), =libz (a library, not
# libcrypto), TLSMETER_BACKEND_PROPQ=provider=nonexistent: each must give exactly one
# `tlsmeter:` warning naming what was wrong, the download must be the plain one byte for byte,
# every record must be decrypted natively, and end.reroute.off_reason must say why. Downloads
# with $TLS_DL (curl, else our C client under ASan).
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload reroute-config

BODY=$((512 * 1024 + 3))
tls_make_file c.bin "$BODY"
LIBZ=$(ldconfig -p 2>/dev/null | awk '$1 == "libz.so.1" && /x86-64|AArch64/ {print $NF; exit}')
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "reroute-config: openssl s_server did not start"
    exit 0
fi
tls_client "$TLS_DL" "$TLS_PORT" c.bin "$d/plain"
if [ "$(cat "$d/plain.rc")" != 0 ]; then
    fail "reroute-config: $TLS_DL failed without the preload"
    exit 0
fi

# bad TAG WORD MODE-IN-TRACE VAR=VALUE...: a $TLS_DL download with those settings. WORD (a fixed
# string: the bad value) must appear in the one warning and in end.reroute.off_reason.
bad() {
    local word=$2 mode=$3 name="reroute-config $1" p=$d/$1 why warn
    shift 3
    TLS_ENV=("$@")
    tls_client "$TLS_DL" "$TLS_PORT" c.bin "$p" "$p.trace.%p.jsonl"
    TLS_ENV=()
    warn=$(grep '^tlsmeter:' "$p.err")
    tls_traces "$p.trace.*.jsonl"
    if ! why=$(tls_same_run "$name" "$d/plain" "$p"); then
        fail "$name: $why"
    elif [ "$(tls_notes "$p.err")" -ne 1 ]; then
        fail "$name: $(tls_notes "$p.err") tlsmeter lines, want 1: $(head -c 300 <<<"$warn")"
    elif [[ $warn != *"$word"* ]]; then
        fail "$name: the warning does not name '$word': $warn"
    elif [ "${#TRACES[@]}" -ne 1 ]; then
        fail "$name: ${#TRACES[@]} trace files, want 1"
    else
        # (the word as a regular expression: escape what it may hold)
        tls_trace_check "$name" "${TRACES[0]}" --got "$(cat "$p.got")" --body "$BODY" \
            --full-read --conns 1 --path native --reroute mode="$mode" --reroute routed=0 \
            --reroute "off_reason~$(sed 's/[][\.*^$+?(){}|/]/\\&/g' <<<"$word")"
    fi
}

bad crypto-bogus bogus native TLSMETER_CRYPTO=bogus
bad lib-missing /nonexistent hw TLSMETER_CRYPTO=hw TLSMETER_BACKEND_LIB=/nonexistent
bad lib-not-elf /etc/passwd hw TLSMETER_CRYPTO=hw TLSMETER_BACKEND_LIB=/etc/passwd
if ! tls_mode_ok soft; then
    skip "reroute-config lib-libz: $TLS_MODE_SKIP"
elif [ -n "$LIBZ" ] && [ -f "$LIBZ" ]; then
    bad lib-libz "$LIBZ" soft TLSMETER_CRYPTO=soft TLSMETER_BACKEND_LIB="$LIBZ"
else
    skip "reroute-config lib-libz: no libz.so.1 in the loader cache"
fi
if tls_mode_ok hw; then
    bad propq-none provider=nonexistent hw TLSMETER_CRYPTO=hw \
        TLSMETER_BACKEND_PROPQ=provider=nonexistent
else
    skip "reroute-config propq-none: $TLS_MODE_SKIP"
fi
tls_server_stop
