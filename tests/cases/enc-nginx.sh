#!/usr/bin/env bash
# enc-nginx: nginx (installed if missing), traced, serving downloads to curl (not traced): the
# server side of encryption. A 64 MiB, an 8 MiB and a 1 MiB download (sha256 checked) and a
# 16 MiB upload in the same run. The worker's trace must hold encrypted records covering each
# response exactly (every byte nginx wrote is in a dir-out record), the upload as decrypted
# records, kept apart: the analyzer's decrypt figures are the dir-in records and reads, its
# encrypt object the dir-out ones, its per-connection table (encrypt.conn_table) the writes
# per connection sorted by bytes, and the encrypt class "hardware" (unmasked) or "table"
# (nginx started with AES masked by OPENSSL_ia32cap: the workers inherit the master's
# capability state: OPENSSL_armcap on aarch64, where it runs in Debian 12's arm64 kernel,
# scripts/arm64vm; under qemu-user it skips).
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=scripts/tlsmeter-mask.sh
. "$TLSM_TOP/scripts/tlsmeter-mask.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload enc-nginx
tls_need_nginx enc-nginx || exit 0
# curl runs untraced here (env -u LD_PRELOAD): no sanitizer runtime in it, so no tls_curl_ok.
CHECK=("$TLSM_PY" "$TLSM_TOOLS/enccheck.py")
mkdir -p "$d/tmp"
chmod 0755 "$d" "$TLS_WWW"
for f in 64:big.bin 8:mid.bin 1:small.bin; do
    head -c $((${f%%:*} * 1024 * 1024)) /dev/urandom >"$TLS_WWW/${f#*:}"
done
chmod 0644 "$TLS_WWW"/*.bin
head -c $((16 * 1024 * 1024)) /dev/urandom >"$d/up.bin"

# serve TAG [VAR=VALUE...]: nginx traced into $d/TAG/, the downloads and the upload, nginx
# stopped; leaves the worker traces in TRACES. Returns 1 after a failure (said).
serve() {
    local tag=$1 port tr master up f code
    shift
    port=$(tls_free_port)
    tr=$d/$tag
    mkdir -p "$tr"
    chmod 0755 "$tr"
    tls_nginx_conf "$d" "$tag" "$port" 1 \
        "location / { root $TLS_WWW; } location /up { return 200 \"ok\\n\"; }" "sendfile off;"
    env LD_PRELOAD="$TLSM_PRELOAD" TLSMETER_OUT="$tr/nginx.%p.jsonl" "$@" \
        nginx -e "$d/$tag.error.log" -p "$d" -c "$d/$tag.conf" >"$d/$tag.out" 2>"$d/$tag.err" &
    master=$!
    TLS_PIDS+=("$master")
    up=
    for _ in $(seq 100); do # <= 10 s
        if [ -s "$d/$tag.pid" ] && env -u LD_PRELOAD curl -sS -o /dev/null --cacert "$TLS_CERT" \
            "https://127.0.0.1:$port/small.bin" 2>/dev/null; then
            up=1
            break
        fi
        kill -0 "$master" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$up" ]; then
        fail "enc-nginx $tag: nginx did not start: $(head -c 300 "$d/$tag.err") $(tail -n 3 "$d/$tag.error.log" 2>/dev/null)"
        return 1
    fi
    for f in big.bin mid.bin small.bin; do
        env -u LD_PRELOAD curl -sS --max-time 120 --cacert "$TLS_CERT" -o "$d/$tag.$f" \
            "https://127.0.0.1:$port/$f"
        if [ "$(tls_sha "$d/$tag.$f")" != "$(tls_sha "$TLS_WWW/$f")" ]; then
            fail "enc-nginx $tag: $f downloaded from traced nginx differs (sha256)"
            tls_stop_pid "$master"
            return 1
        fi
    done
    code=$(env -u LD_PRELOAD curl -sS --max-time 60 --cacert "$TLS_CERT" -H 'Expect:' \
        --data-binary @"$d/up.bin" -o "$d/$tag.up.out" -w '%{http_code}' "https://127.0.0.1:$port/up")
    kill -QUIT "$master" 2>/dev/null
    for _ in $(seq 100); do
        kill -0 "$master" 2>/dev/null || break
        sleep 0.1
    done
    tls_stop_pid "$master"
    if [ "$code" != 200 ]; then
        fail "enc-nginx $tag: the upload was answered '$code'"
        return 1
    fi
    tlsm_jsonl "$tr/nginx.%p.jsonl" # format 2 as JSON Lines, for the checks below
    # The worker's trace: the one with encrypted records (the master does no TLS).
    TRACES=()
    for f in "$tr"/nginx.*.jsonl; do
        grep -q '"dir":"out"' "$f" && TRACES+=("$f")
    done
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "enc-nginx $tag: ${#TRACES[@]} traces with encrypted records, want 1 (the worker)"
        return 1
    fi
    pass "enc-nginx $tag: 64, 8 and 1 MiB downloads from traced nginx intact, 16 MiB upload answered 200"
}

MASK="OPENSSL_ia32cap=$TLSM_IA32_SOFT_MASK"
[ "$(target_arch)" = aarch64 ] && MASK="OPENSSL_armcap=$TLSM_ARM_SOFT_MASK"
for run in "native" "masked $MASK"; do
    read -r tag env <<<"$run"
    # shellcheck disable=SC2086
    serve "$tag" $env || continue
    w=${TRACES[0]}
    body=$(((64 + 8 + 1 + 1) * 1024 * 1024)) # the startup probe fetched small.bin too
    tls_check "enc-nginx $tag: the worker's dir-out records cover every response byte it wrote" \
        "${CHECK[@]}" records "$w" --min-recs $((body / 16384)) --tls 1.3
    python3 - "$w" "$body" >"$d/$tag.body" <<'PY'
import json, sys
w = sum(e["written"] for e in map(json.loads, open(sys.argv[1])) if e.get("ev") == "write" and e["written"] > 0)
print(w - int(sys.argv[2]))
PY
    head=$(cat "$d/$tag.body")
    if [ "$head" -gt 0 ] && [ "$head" -lt 4096 ]; then
        pass "enc-nginx $tag: the worker wrote the four bodies plus $head bytes of HTTP heads"
    else
        fail "enc-nginx $tag: the worker's writes exceed the bodies by $head bytes (want HTTP heads, 1..4095)"
    fi
    "$O/tlsmeter-analyze" --json "$w" >"$d/$tag.json" 2>"$d/$tag.an.err"
    "$O/tlsmeter-analyze" "$w" >"$d/$tag.txt" 2>>"$d/$tag.an.err"
    read -r inr inb outr outb _ < <("${CHECK[@]}" count "$w" | tr ' ' '\n' | cut -d= -f2 | tr '\n' ' ')
    impl=hardware
    [ "$tag" = masked ] && impl=table
    tls_check "enc-nginx $tag: decrypt figures = the upload's dir-in records ($inr, $inb B read), encrypt = dir-out ($outr), per-connection table by bytes, class $impl" \
        "${CHECK[@]}" analyzer "$d/$tag.json" --in-records "$inr" --in-bytes "$inb" \
        --out-records "$outr" --out-bytes "$outb" --conns-min 5 --conns-from "$w" --impl "$impl"
    if [ "$inb" -ge $((16 * 1024 * 1024)) ] && grep -q '^encryption ' "$d/$tag.txt" &&
        grep -A200 '^encryption ' "$d/$tag.txt" | grep -q '^connections'; then
        pass "enc-nginx $tag: the report has the upload's reads (>= 16 MiB) and an encryption section with its connections table"
    else
        fail "enc-nginx $tag: reads $inb B, report without encryption section or its connections table"
    fi
done
