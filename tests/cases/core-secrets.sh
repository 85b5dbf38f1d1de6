#!/usr/bin/env bash
# core-secrets: no plaintext and no key material in a trace; traces are created 0600 whatever
# the umask; a symlink or file planted at the trace path is never written through.
# tlsm-arch: x86_64 aarch64
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload core-secrets

BODY=$((2 * 1024 * 1024 + 4321))
tls_make_file s.bin "$BODY"
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "core-secrets: openssl s_server did not start"
    exit 0
fi

# No 16-byte window of the plaintext (raw or hex) and no TLS secret from the key log (curl and
# Python and our client all honour SSLKEYLOGFILE) in the trace. Run under umask 000: the file
# must be 0600.
for c in curl py tlsget; do
    if ! tls_client_ok "$c"; then
        skip "core-secrets $c: $TLS_CLIENT_SKIP"
        continue
    fi
    p=$d/$c
    TLS_ENV=(SSLKEYLOGFILE="$p.keys")
    (umask 000 && tls_client "$c" "$TLS_PORT" s.bin "$p" "$p.trace.%p.jsonl")
    TLS_ENV=()
    tls_traces "$p.trace.*"
    if [ "$(cat "$p.rc")" != 0 ] || [ "${#TRACES[@]}" -ne 1 ]; then
        fail "core-secrets $c: exit $(cat "$p.rc"), ${#TRACES[@]} traces"
        continue
    fi
    if [ ! -s "$p.keys" ]; then
        fail "core-secrets $c: the client wrote no key log (test is broken)"
        continue
    fi
    tls_trace_check "core-secrets $c" "${TRACES[0]}" --got "$(cat "$p.got")" --full-read \
        --no-plaintext "$TLS_WWW/s.bin" --keylog "$p.keys" --mode 600
done

# plant_check NAME KIND: KIND symlink (to an existing file), dangling (symlink to nothing),
# file (an existing regular file) at the exact TLSMETER_OUT path.
plant_check() {
    local name="core-secrets planted-$1" out=$d/planted-$1.jsonl victim=$d/victim-$1 p=$d/pl-$1
    rm -f "$victim" "$out"
    case $1 in
    symlink) printf 'precious\n' >"$victim" && chmod 0644 "$victim" && ln -s "$victim" "$out" ;;
    dangling) ln -s "$victim" "$out" ;;
    file) printf 'precious\n' >"$out" && chmod 0644 "$out" ;;
    esac
    tls_client "$TLS_DL" "$TLS_PORT" s.bin "$p" "$out"
    if [ "$(cat "$p.rc")" != 0 ]; then
        fail "$name: $TLS_DL exit $(cat "$p.rc") under the preload"
    elif [ "$1" = dangling ] && [ -e "$victim" ]; then
        fail "$name: the symlink's target $victim was created"
    elif [ "$1" = symlink ] && [ "$(cat "$victim")/$(stat -c %a "$victim")" != "precious/644" ]; then
        fail "$name: the symlink's target was changed"
    elif [ "$1" = file ] && [ "$(cat "$out")/$(stat -c %a "$out")" != "precious/644" ]; then
        fail "$name: the existing file was written"
    elif [ "$1" != file ] && [ ! -L "$out" ]; then
        fail "$name: the symlink was replaced"
    elif [ -f "$out.1" ]; then
        # The contract: the writer moves on to NAME.1; that file must be a proper trace.
        TLS_PASS_NOTE="trace went to NAME.1" tls_trace_check "$name" "$out.1" --conns 1
    else
        TLS_PASS_NOTE="no trace written: $(grep -m1 '^tlsmeter:' "$p.err" | head -c 80)" \
            tls_check "$name" true
    fi
}
for kind in symlink dangling file; do
    plant_check "$kind"
done
