#!/usr/bin/env bash
# aarch64-tamper: under qemu, tests/tools/tamper_proxy.py flips one ciphertext byte of a
# response record between the arm64 s_server and s_client (TLS 1.3 AES-128-GCM). Traced with the
# cross-built preload natively, with TLSMETER_CRYPTO=hw on a masked app (OPENSSL_armcap=0, so
# the backend really is another path) and with TLSMETER_CRYPTO=soft, s_client must fail as it
# does untraced: same exit code, same plaintext before the failure, same OpenSSL error; and the
# trace shows the rejected record (tag_ok false, no plaintext) on the chosen path.
# tlsm-arch: aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
. "$TLSM_TOP/tests/lib-a64tls.sh"
unset OPENSSL_armcap
name=aarch64-tamper
if [ ! -f "$TLSM_PRELOAD" ]; then
    fail "$name: $TLSM_PRELOAD is not built"
    exit 0
fi
d=$(case_dir)
a64_init "$d" || { fail "$name: no certificate"; exit 0; }
head -c $((512 * 1024 + 777)) /dev/urandom >"$d/www/t.bin"

a64_server 1.3 TLS_AES_128_GCM_SHA256 || { fail "$name: server did not start"; exit 0; }
python3 "$TLSM_TOP/tests/tools/tamper_proxy.py" --target-port "$A64_PORT" --tls 1.3 \
    --port-file "$d/proxy.port" --max-conns 8 --timeout 120 2>"$d/proxy.log" &
A64_PIDS+=($!)
for _ in $(seq 100); do
    [ -s "$d/proxy.port" ] && break
    sleep 0.05
done
A64_PORT=$(cat "$d/proxy.port" 2>/dev/null)
[ -n "$A64_PORT" ] || { fail "$name: tamper proxy did not start: $(head -c 300 "$d/proxy.log")"; exit 0; }

flips() { grep -c flipped "$d/proxy.log"; }
# OpenSSL's error lines without the thread-id prefix and source locations.
errors() { grep -o 'error:[0-9A-F]*:[^:]*:[^:]*:[^:]*' "$1" | sort -u; }

# same_failure PLAIN RUN: both failed alike.
same_failure() {
    [ "$(cat "$1.rc")" = "$(cat "$2.rc")" ] ||
        { echo "exit $(cat "$2.rc"), untraced $(cat "$1.rc")"; return 1; }
    [ "$(a64_sha "$1.out")" = "$(a64_sha "$2.out")" ] ||
        { echo "stdout $(stat -c %s "$2.out") bytes, untraced $(stat -c %s "$1.out")"; return 1; }
    [ "$(errors "$1.err")" = "$(errors "$2.err")" ] ||
        { echo "errors '$(errors "$2.err" | tr '\n' ' ')', untraced '$(errors "$1.err" | tr '\n' ' ')'"; return 1; }
}

# rejected TRACE PATH: a rec with tag_ok false, pt 0, on PATH, and no later plaintext.
rejected() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if '"ev":"rec"' in l and '"dir":"out"' not in l]
bad = [r for r in recs if r.get("tag_ok") is False]
if len(bad) != 1:
    sys.exit(f"{len(bad)} records with tag_ok false, want 1")
r = bad[0]
if r.get("pt") != 0 or r.get("path") != sys.argv[2]:
    sys.exit(f"rejected record has pt {r.get('pt')} path {r.get('path')}, want 0 {sys.argv[2]}")
EOF
}

a64_get "$d/plain" t.bin
n=$(flips)
if [ "$n" != 1 ] || [ "$(cat "$d/plain.rc")" = 0 ]; then
    fail "$name: untraced s_client was not hit as planned (flips $n, exit $(cat "$d/plain.rc"))"
    exit 0
fi
pass "$name untraced: s_client rejects the flipped record (exit $(cat "$d/plain.rc"))"

for m in "native" "hw OPENSSL_armcap=0 TLSMETER_CRYPTO=hw" "soft TLSMETER_CRYPTO=soft"; do
    # shellcheck disable=SC2086 # "LABEL VAR=VAL..." split on purpose
    set -- $m
    label=$1
    shift
    a64_get "$d/$label" t.bin traced "$@"
    if [ "$(flips)" != $((++n)) ]; then
        fail "$name $label: the proxy flipped $(($(flips) - n + 1)) records, want 1"
        continue
    fi
    check "$name $label: fails exactly as untraced" same_failure "$d/plain" "$d/$label"
    t=("$d/$label".*.jsonl)
    check "$name $label: trace shows the rejected record on path $label" rejected "${t[0]}" "$label"
done
a64_server_stop
grep -q "^FAIL $name" "$TLSM_RESULTS" || rm -rf "$d"
