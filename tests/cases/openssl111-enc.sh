#!/usr/bin/env bash
# openssl111-enc: OpenSSL 1.1.1's encrypting side and handshake parts (on a
# 1.1.1 copy), in Debian 11's own userland (glibc 2.31, OpenSSL 1.1.1w, its own ld-2.31.so)
# with the dist library preloaded (tests/lib-bullseye.sh).
# - Upload: 1.1.1's `openssl s_client` sends a RAW head and 16 MiB to tests/tools/hashserver.py
#   (which answers with the sha256 and byte count it received: the instrument), TLS 1.3
#   AES-128-GCM and TLS 1.2 AES-256-GCM: the answer is the file's, as without tlsmeter; dir-out
#   records carry exactly the bytes the writes wrote (tests/tools/enccheck.py); the analyzer's
#   encrypt object has exactly the bytes s_client was given as bytes written, >= 1 record per
#   16 KiB, class hardware; masked (OPENSSL_ia32cap) the encrypt class is table with the
#   software-aes verdict naming encryption; masked + TLSMETER_CRYPTO=hw every sealed record
#   on path hw, same answer.
# - Handshakes, client: 1.1.1's `openssl s_time -new` against the host's s_server (TLS 1.3
#   and 1.2): one conn open per connection s_time counted, each with the parts cert_parse,
#   chain_verify, verify (key rsa2048: the certificate's, by openssl x509), key_exchange and
#   key_schedule (1.1.1 runs HKDF and the TLS 1.2 PRF as EVP_PKEY_derive on a context without
#   a key, and its Finished MAC through EVP_DigestSignInit with an HMAC key: both the key
#   schedule, not the key exchange or a signature), records for TLS 1.3 (not under qemu, where
#   the time is wall time and they stay in the rest); no sign part (a
#   client without a certificate signs nothing); the analyzer's handshake connections.
# - Handshakes, server: 1.1.1's `openssl s_server -naccept 20` traced (interactive mode: its
#   -WWW mode drives TLS through an SSL BIO, whose calls stay inside libssl, see the report),
#   20 host s_client connections, each verifying the server: 20 server conn opens with sign (key rsa2048), key_exchange, key_schedule, and
#   tickets for TLS 1.3.
# Under make check-aarch64: Debian 11's arm64 userland under qemu, OPENSSL_armcap=0 as the mask,
# 4 MiB uploads.
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=tests/lib-bullseye.sh
. "$TLSM_TOP/tests/lib-bullseye.sh"
# shellcheck source=scripts/tlsmeter-mask.sh
. "$TLSM_TOP/scripts/tlsmeter-mask.sh"
d=$(case_dir)
tls_init "$d"
N=openssl111-enc
bz_setup "$N" "$(target_arch)"
A=$O/tlsmeter-analyze
if under_qemu; then # the cross-built analyzer (the board's view), run through qemu
    target_wrapper "$A" "$d/analyze"
    A=$d/analyze
fi
CHECK=("$TLSM_PY" "$TLSM_TOOLS/enccheck.py")
tlsm_soft_mask "$BZ_ARCH" # the software mask (scripts/tlsmeter-mask.sh)
MASK="$TLSM_MASK_VAR=$TLSM_MASK"
BIG=$((16 * 1024 * 1024 + 7))
under_qemu && BIG=$((4 * 1024 * 1024 + 7)) # every byte is emulated
head -c "$BIG" /dev/urandom >"$d/big.bin"
{ printf 'RAW %d\n' "$BIG"; cat "$d/big.bin"; } >"$d/req"
SENT=$(tls_size "$d/req")
want="sha256=$(tls_sha "$d/big.bin") bytes=$BIG"
certkey=$(openssl x509 -in "$TLS_CERT" -noout -text | sed -n 's/.*Public-Key: (\([0-9]*\) bit).*/rsa\1/p')

tls_hashserver_start "$d" "$N" || exit 0

# bz_run PREFIX [VAR=VAL...] PROG ARGS...: a Debian 11 program (bz_cmd) with stdin from
# PREFIX.in if it exists; PREFIX.out, .err, .rc; TLSMETER_OUT traces as JSON Lines.
bz_run() {
    local p=$1 a
    shift
    bz_cmd "$@"
    timeout -k 5 "$TLS_RUN_TIMEOUT" "${BZ_CMD[@]}" <"${BZ_IN:-/dev/null}" >"$p.out" 2>"$p.err"
    echo $? >"$p.rc"
    for a in "$@"; do
        [[ $a == TLSMETER_OUT=* ]] && tlsm_jsonl "${a#TLSMETER_OUT=}"
    done
}

# upload NAME ARGS -- ENV...: 1.1.1 s_client uploads req (its ARGS), traced with ENV.
upload() {
    local name=$1 p=$d/$1 args=()
    shift
    while [ "$1" != -- ]; do args+=("$1") && shift; done
    shift
    BZ_IN=$d/req bz_run "$p" ${1+"$@"} openssl s_client -connect "127.0.0.1:$PORT" -quiet \
        -nocommands -CAfile "$TLS_CERT" -servername localhost "${args[@]}"
    if [ "$(cat "$p.rc")" != 0 ] || ! grep -qx "$want" "$p.out"; then
        fail "$N $name: exit $(cat "$p.rc"), answer '$(head -c 120 "$p.out")', want '$want' ($(grep -v '^depth\|^verify' "$p.err" | head -c 200))"
        return 1
    fi
}

for s in "1.3 AES-128-GCM -tls1_3 -ciphersuites TLS_AES_128_GCM_SHA256" \
    "1.2 AES-256-GCM -tls1_2 -cipher ECDHE-RSA-AES256-GCM-SHA384"; do
    read -r proto cipher sargs <<<"$s"
    # shellcheck disable=SC2206
    sargs=($sargs)
    upload "plain$proto" "${sargs[@]}" -- || continue
    upload "up$proto" "${sargs[@]}" -- LD_PRELOAD="$BZ_LIB" TLSMETER_OUT="$d/up$proto.%p.jsonl" || continue
    if ! why=$(tls_same_run x "$d/plain$proto" "$d/up$proto"); then
        fail "$N upload TLS $proto: $why"
        continue
    fi
    tls_traces "$d/up$proto.*.jsonl"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "$N upload TLS $proto: ${#TRACES[@]} traces, want 1"
        continue
    fi
    pass "$N upload TLS $proto $cipher ($BZ_ARCH): Debian 11 s_client's $((BIG >> 20)) MiB reached the server intact, traced and not"
    tls_check "$N upload TLS $proto: dir-out records carry exactly what the writes wrote" "${CHECK[@]}" \
        records "${TRACES[0]}" --body "$BIG" --min-recs $((BIG / 16384)) --tls "$proto" --cipher "$cipher"
    "$A" --json "${TRACES[0]}" >"$d/up$proto.json" 2>/dev/null
    tls_check "$N upload TLS $proto: encrypt bytes written = the $SENT bytes s_client was given, class hardware" \
        "$TLSM_PY" -c 'import json, sys
e = json.load(open(sys.argv[1])).get("encrypt")
sent = int(sys.argv[2])
assert e, "no encrypt object"
assert e["bytes_written"] == sent, (e["bytes_written"], sent)
assert e["records_app"] >= sent // 16384, e["records_app"]
assert e["impl"] == "hardware", e["impl"]
print("ok %d bytes written, %d records" % (e["bytes_written"], e["records"]))' "$d/up$proto.json" "$SENT"
    if upload "masked$proto" "${sargs[@]}" -- LD_PRELOAD="$BZ_LIB" "$MASK" TLSMETER_CALIBRATE=1 \
        TLSMETER_OUT="$d/masked$proto.%p.jsonl"; then
        tls_traces "$d/masked$proto.*.jsonl"
        "$A" --json "${TRACES[0]:-/nonexistent}" >"$d/masked$proto.json" 2>/dev/null
        tls_check "$N upload TLS $proto masked: encrypt class table, software-aes names encryption" \
            "${CHECK[@]}" analyzer "$d/masked$proto.json" --impl table --verdict software-aes
    fi
    if ! tls_mode_ok hw; then
        skip "$N upload TLS $proto masked + hw: $TLS_MODE_SKIP"
    elif upload "maskedhw$proto" "${sargs[@]}" -- LD_PRELOAD="$BZ_LIB" "$MASK" TLSMETER_CRYPTO=hw \
        TLSMETER_OUT="$d/maskedhw$proto.%p.jsonl"; then
        tls_traces "$d/maskedhw$proto.*.jsonl"
        tls_check "$N upload TLS $proto masked + hw: same answer, every sealed record on path hw" \
            "${CHECK[@]}" records "${TRACES[0]:-/nonexistent}" --path hw --body "$BIG" \
            --min-recs $((BIG / 16384)) --tls "$proto"
    fi
done

# parts_check NAME TRACE ROLE COUNT WANT-PARTS NO-PARTS [tickets]: every conn open of ROLE
# (COUNT of them) has the parts WANT (comma list), none of NO, sign/verify keyed certkey.
parts_check() {
    tls_check "$1" "$TLSM_PY" - "$2" "$3" "$4" "$5" "$6" "$certkey" "${7:-}" <<'PY'
import json, sys
path, role, count, want, no, key, tickets = sys.argv[1:8]
ev = [json.loads(l) for l in open(path)]
op = [e for e in ev if e["ev"] == "conn" and e["phase"] == "open" and e["role"] == role]
assert len(op) == int(count), "%d %s conn opens, want %s" % (len(op), role, count)
want, no = set(want.split(",")), set(no.split(",")) - {""}
for e in op:
    hs = e.get("hs")
    assert hs, "conn %d without hs" % e["conn"]
    parts = hs["parts"]
    assert want <= set(parts), "conn %d parts %s, want %s" % (e["conn"], sorted(parts), sorted(want))
    assert not no & set(parts), "conn %d has %s" % (e["conn"], sorted(no & set(parts)))
    for p in ("sign", "verify"):
        if p in parts:
            assert parts[p].get("key") == key, "conn %d %s key %r, want %s" % (e["conn"], p, parts[p].get("key"), key)
    if not hs.get("preempt"):
        assert sum(v["ns"] for v in parts.values()) <= hs["ns"], "conn %d parts exceed ns" % e["conn"]
    if tickets:
        assert hs.get("tickets", 0) >= 1, "conn %d issued no ticket" % e["conn"]
print("ok %d %s connections with %s" % (len(op), role, sorted(want)))
PY
}

for s in "1.3 TLS_AES_128_GCM_SHA256 records" "1.2 ECDHE-RSA-AES128-GCM-SHA256 "; do
    read -r proto suite extra <<<"$s"
    # Under qemu (cputime wall) handshake records stay in the rest (docs/trace-format.md "hs").
    under_qemu && extra=
    if ! tls_server_start "$proto" "$suite"; then
        fail "$N handshakes TLS $proto: openssl s_server did not start"
        continue
    fi
    p=$d/stime$proto
    bz_run "$p" LD_PRELOAD="$BZ_LIB" TLSMETER_OUT="$p.%p.jsonl" openssl s_time \
        -connect "127.0.0.1:$TLS_PORT" -new -time 2 -CAfile "$TLS_CERT"
    tls_server_stop
    n=$(sed -n 's/^\([0-9]*\) connections in [0-9]* real seconds.*/\1/p' "$p.out")
    tls_traces "$p.*.jsonl"
    if [ -z "$n" ] || [ "${#TRACES[@]}" -ne 1 ]; then
        fail "$N handshakes TLS $proto: s_time said '$(tail -n 1 "$p.out")', ${#TRACES[@]} traces"
        continue
    fi
    parts_check "$N s_time -new TLS $proto: $n connections (s_time's count), each with its parts, key $certkey" \
        "${TRACES[0]}" client "$n" "cert_parse,chain_verify,verify,key_exchange,key_schedule${extra:+,$extra}" sign
    "$A" --json "${TRACES[0]}" >"$p.json" 2>/dev/null
    tls_check "$N s_time TLS $proto: the analyzer's handshake counts the $n connections and the key schedule" \
        "$TLSM_PY" -c 'import json, sys
h = json.load(open(sys.argv[1]))["handshake"]
assert h["connections"] == int(sys.argv[2]), (h["connections"], sys.argv[2])
assert h["parts"].get("key_schedule", {}).get("calls", 0) > 0, sorted(h["parts"])' "$p.json" "$n"
done

# The server side: 1.1.1's s_server traced, 20 connections from the host's s_client.
for proto in 1.3 1.2; do
    port=$(tls_free_port)
    p=$d/server$proto
    bz_cmd LD_PRELOAD="$BZ_LIB" TLSMETER_OUT="$p.%p.jsonl" openssl s_server -accept "127.0.0.1:$port" \
        -cert "$TLS_CERT" -key "$TLS_KEY" -naccept 20 "-tls${proto/./_}"
    # Its stdin stays open (at end of input s_server stops): a FIFO this shell holds.
    rm -f "$p.fifo" && mkfifo "$p.fifo"
    exec {keep}<>"$p.fifo"
    "${BZ_CMD[@]}" <"$p.fifo" >"$p.log" 2>&1 &
    spid=$!
    TLS_PIDS+=("$spid")
    if ! tls_wait_log "$p.log" ACCEPT "$spid"; then
        fail "$N server TLS $proto: Debian 11 s_server did not start: $(head -c 200 "$p.log")"
        continue
    fi
    ok=0
    for _ in $(seq 20); do
        echo Q | timeout 10 openssl s_client -connect "127.0.0.1:$port" -CAfile "$TLS_CERT" \
            -servername localhost 2>/dev/null | grep -q "Verify return code: 0 (ok)" && ok=$((ok + 1))
    done
    for _ in $(seq 100); do
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.05
    done
    tls_stop_pid "$spid"
    exec {keep}>&-
    tlsm_jsonl "$p.%p.jsonl"
    tls_traces "$p.*.jsonl"
    if [ "$ok" -ne 20 ] || [ "${#TRACES[@]}" -ne 1 ]; then
        fail "$N server TLS $proto: $ok of 20 clients connected, ${#TRACES[@]} traces"
        continue
    fi
    tk=
    [ "$proto" = 1.3 ] && tk=tickets
    parts_check "$N s_server TLS $proto: 20 server handshakes with sign (key $certkey), key exchange, key schedule${tk:+, tickets}" \
        "${TRACES[0]}" server 20 "sign,key_exchange,key_schedule" "" "$tk"
done
