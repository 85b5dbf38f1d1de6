#!/usr/bin/env bash
# trust-speed: tlsmeter's crypto ns/B for 16 KiB records agrees with `openssl speed`, the
# independent instrument (it divides by CPU time), at the same capability mask: hardware
# (AES-NI + PCLMULQDQ) and table (AES-NI, PCLMULQDQ, SSSE3 hidden), AES-128-GCM and
# AES-256-GCM, TLS 1.3. The analyzer's median over the bulk records (--json) must be within 0.8-1.3x
# of speed's figure measured in the same run (a ratio of two measurements made side by side,
# not a timing assertion). The speed runs are interleaved with the downloads; medians of 3.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload trust-speed
A=$O/tlsmeter-analyze
if [ ! -x "$A" ]; then
    fail "trust-speed: $A not built; run make"
    exit 0
fi
if [ -n "${TLSM_SAN:-}" ]; then
    # Sanitizer builds slow the hooks, not libcrypto: ns/B are not the product's figures.
    skip "trust-speed: sanitizer build (its per-call costs are not tlsmeter's)"
    exit 0
fi
BODY=$((24 * 1024 * 1024))
tls_make_file big.bin "$BODY"
AEAD=
openssl speed -help 2>&1 | grep -q -- '-aead' && AEAD=-aead

# speed MASK CIPHER: ns/B of openssl speed's 16 KiB decrypt (machine-readable +F line).
speed() {
    local m=$1
    shift
    if [ "$m" = hw ]; then
        env -u OPENSSL_ia32cap openssl speed -mr -seconds 1 $AEAD -evp "$1" -decrypt \
            -bytes 16384 2>/dev/null
    else
        OPENSSL_ia32cap="~0x200020200000000:~0x0" openssl speed -mr -seconds 1 $AEAD \
            -evp "$1" -decrypt -bytes 16384 2>/dev/null
    fi | awk -F: '/^\+F:/ {printf "%.5f\n", 1e9 / $NF}'
}

# bulk_median TRACE: the analyzer's median ns/B over the cipher's bulk records (--json
# ciphers[].size_classes.bulk.median), "nan" when it does not report one.
bulk_median() {
    "$A" --json "$1" >"$1.json" 2>"$1.err" || { echo nan; return; }
    "$TLSM_PY" - "$1.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
for row in s.get("ciphers", []):
    b = (row.get("size_classes") or {}).get("bulk") or {}
    if b.get("median") is not None:
        print("%.5f" % b["median"])
        sys.exit(0)
print("nan")
EOF
}

for s in "TLS_AES_128_GCM_SHA256 AES-128-GCM" "TLS_AES_256_GCM_SHA384 AES-256-GCM"; do
    read -r suite cipher <<<"$s"
    if ! tls_server_start 1.3 "$suite"; then
        fail "trust-speed $cipher: openssl s_server did not start"
        continue
    fi
    for m in hw table; do
        sp='' tl=''
        for i in 1 2 3; do
            p=$d/$cipher.$m.$i
            if [ "$m" = hw ]; then
                TLS_ENV=()
            else
                TLS_ENV=("OPENSSL_ia32cap=~0x200020200000000:~0x0")
            fi
            tls_client curl "$TLS_PORT" big.bin "$p" "$p.%p.jsonl"
            TLS_ENV=()
            tls_traces "$p.*.jsonl"
            if [ "$(cat "$p.rc")" != 0 ] || [ "${#TRACES[@]}" -ne 1 ]; then
                fail "trust-speed $cipher $m: download $i failed or left ${#TRACES[@]} traces"
                continue 2
            fi
            tl+="$(bulk_median "${TRACES[0]}") "
            sp+="$(speed "$m" "$cipher") "
        done
        tls_check "trust-speed $cipher $m 16 KiB within 0.8-1.3x of openssl speed" \
            "$TLSM_PY" -c 'import statistics, sys
tl = statistics.median(float(x) for x in sys.argv[1].split())
sp = statistics.median(float(x) for x in sys.argv[2].split())
r = tl / sp
print("tlsmeter %.4f ns/B, openssl speed %.4f ns/B, ratio %.3f" % (tl, sp, r))
sys.exit(0 if 0.8 <= r <= 1.3 else "ratio %.3f outside 0.8-1.3 (tlsmeter %s; speed %s)"
         % (r, sys.argv[1], sys.argv[2]))' "$tl" "$sp"
    done
    tls_server_stop
done
