#!/usr/bin/env bash
# clients-classes: each real client a distribution ships (openssl s_client, curl, Python's ssl)
# downloads natively, under the software mask and masked with TLSMETER_CRYPTO=hw; on the host
# and, through tests/run's matrix, with Debian 13's own programs and OpenSSL 3.5. For each:
#   - the output is unchanged and the trace accounts for every byte the client read, at least
#     one record per 16 KiB (tracecheck; in the matrix, records from that release's copy);
#   - the report's bytes received are the bytes the client read (nothing counted twice);
#   - natively the class is hardware, with the kernel this CPU and version run named: on
#     x86_64 3.5 with AVX-512F, VAES and VPCLMULQDQ the VAES/AVX-512 GCM kernel, else AES-NI
#     (PCLMULQDQ GHASH); on aarch64 ARMv8 AES with PMULL. A version whose layout tlsmeter has
#     not verified (Debian's next release, [forky]: OpenSSL 3.6) names no code: its class
#     comes from the speed band and its detail says "layout not verified";
#   - under the software mask (scripts/tlsmeter-mask.sh) the class is table, with the
#     software-aes verdict, so the mask really means software on this version;
#   - masked + hw: every record on the hw path, the same sha256, class hardware;
#   - the handshake's parts are there and add up to no more than the handshake.
# The ns/B of the masked class against `openssl speed` is trust-speed's (same matrix).
# tlsm-arch: x86_64 aarch64
# tlsm-userland: trixie forky
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=scripts/tlsmeter-mask.sh
. "$TLSM_TOP/scripts/tlsmeter-mask.sh"
d=$(case_dir)
tls_init "$d"
N=clients-classes
tls_need_preload "$N"
tls_analyzer "$N"
tlsm_soft_mask "$(target_arch)"
MASK="$TLSM_MASK_VAR=$TLSM_MASK"
BODY=$((8 * 1024 * 1024 + 99))
under_qemu && BODY=$((2 * 1024 * 1024 + 99))
tls_make_file c.bin "$BODY"
want_sha=$(tls_sha "$TLS_WWW/c.bin")

# What the native class's detail must name on this CPU and version (the analyzer's words).
version=$(run_target openssl version 2>/dev/null | awk '{print $2}')
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
if [[ $version != 1.1.1* && $version != 3.0.* && $version != 3.5.* ]]; then
    KERNEL="layout not verified"
elif [ "$(target_arch)" = aarch64 ]; then
    KERNEL="ARMv8 AES"
elif [[ $version == 3.5* && " $flags " == *" avx512f "* && " $flags " == *" vaes "* &&
    " $flags " == *" vpclmulqdq "* ]]; then
    KERNEL="VAES"
else
    KERNEL="AES-NI"
fi
# The classes: from the code, or for an unverified version from the speed band, which means
# nothing under qemu (emulated time): there the report says unknown, naming the version.
WANT_NATIVE=hardware WANT_MASKED=table MASK_VERDICT=software-aes
if [ "$KERNEL" = "layout not verified" ] && under_qemu; then
    WANT_NATIVE=unknown WANT_MASKED=unknown MASK_VERDICT=''
fi
# traced KIND TAG VAR=VAL...: a traced download by client KIND; checks the program's side and
# the trace's bytes; sets TRACE ("" after a failure).
traced() {
    local kind=$1 tag=$2 p=$d/$1.$2.$suite why
    shift 2
    TRACE=
    TLS_ENV=("$@")
    tls_client "$kind" "$TLS_PORT" c.bin "$p" "$p.trace.%p.jsonl"
    TLS_ENV=()
    if ! why=$(tls_same_run x "$d/$kind.plain.$suite" "$p"); then
        fail "$N $kind $tag $suite: $why"
        return 1
    fi
    tls_traces "$p.trace.*.jsonl"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "$N $kind $tag $suite: ${#TRACES[@]} trace files, want 1"
        return 1
    fi
    TRACE=${TRACES[0]}
    GOT=$(cat "$p.got")
    tls_trace_check "$N $kind $tag $suite: output unchanged, every byte read in a record" \
        "$TRACE" --got "$(cat "$p.got")" --body "$BODY" --full-read --cipher "$cipher" \
        --tls "$proto" --conns 1
}

# classed NAME TRACE WANT-IMPL PATH DETAIL-WORD [VERDICT]: tlsmeter-analyze --json says WANT-IMPL
# overall and for (cipher, PATH), whose detail contains DETAIL-WORD ("" any), VERDICT among
# the verdicts; the handshake's parts add up to no more than it.
classed() {
    local name=$1 trace=$2
    if ! "$A" --json "$trace" >"$trace.json" 2>"$trace.json.err"; then
        fail "$name: tlsmeter-analyze failed: $(head -c 200 "$trace.json.err")"
        return
    fi
    tls_check "$name" "$TLSM_PY" - "$trace.json" "$cipher" "$GOT" "${@:3}" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
cipher, got, want, path, word = sys.argv[2:7]
verdict = sys.argv[7] if len(sys.argv) > 7 else ""
errs = []
if s.get("bytes_received") != int(got):
    errs.append("bytes_received %r, the client read %s" % (s.get("bytes_received"), got))
if s.get("impl") != want:
    errs.append("impl %r, want %s" % (s.get("impl"), want))
rows = [c for c in s.get("ciphers", []) if c.get("cipher") == cipher and c.get("path") == path]
if not rows or any(c.get("impl") != want or word not in (c.get("impl_detail") or "")
                   for c in rows):
    errs.append("ciphers %s/%s: %r, want %s naming %r" % (
        cipher, path, [(c.get("impl"), c.get("impl_detail")) for c in rows], want, word))
ids = [v.get("id") for v in s.get("verdicts", [])]
if verdict and verdict not in ids:
    errs.append("verdicts %s, want %s among them" % (ids, verdict))
hs = s.get("handshake") or {}
parts = hs.get("parts") or {}
if not parts:
    errs.append("no handshake parts")
elif sum(p["ns"] for p in parts.values()) > hs.get("parts_ns", 0) + 1:
    errs.append("handshake parts add up to more than the handshake: %r" % hs)
sys.exit("; ".join(errs) if errs else 0)
PY
}

SUITES=("1.3 TLS_AES_128_GCM_SHA256 AES-128-GCM" "1.2 ECDHE-RSA-AES256-GCM-SHA384 AES-256-GCM")
# Under qemu-user every download and every Python start-up is emulated: one suite (CI time).
under_qemu && SUITES=("${SUITES[0]}")
for s in "${SUITES[@]}"; do
    read -r proto suite cipher <<<"$s"
    if ! tls_server_start "$proto" "$suite"; then
        fail "$N $suite: openssl s_server did not start"
        continue
    fi
    for kind in sclient curl py; do
        if ! tls_client_ok "$kind"; then
            skip "$N $kind $suite: $TLS_CLIENT_SKIP"
            continue
        fi
        tls_client "$kind" "$TLS_PORT" c.bin "$d/$kind.plain.$suite"
        if [ "$(cat "$d/$kind.plain.$suite.rc")" != 0 ] ||
            [ "$(tls_sha "$d/$kind.plain.$suite.body")" != "$want_sha" ]; then
            fail "$N $kind $suite: download failed without the preload: $(head -c 200 "$d/$kind.plain.$suite.err")"
            continue
        fi
        traced "$kind" native &&
            classed "$N $kind native $suite: $WANT_NATIVE, $KERNEL named" "$TRACE" \
                "$WANT_NATIVE" native "$KERNEL"
        traced "$kind" masked "$MASK" &&
            classed "$N $kind masked $suite: $WANT_MASKED ($TLSM_MASK_WHAT)" "$TRACE" \
                "$WANT_MASKED" native "" $MASK_VERDICT
        if ! tls_mode_ok hw; then
            skip "$N $kind masked hw $suite: $TLS_MODE_SKIP"
            continue
        fi
        traced "$kind" hw "$MASK" TLSMETER_CRYPTO=hw &&
            tls_trace_check "$N $kind masked hw $suite: every record rerouted" "$TRACE" \
                --path hw --reroute 'routed>0' --reroute fallback=0 &&
            classed "$N $kind masked hw $suite: hardware" "$TRACE" hardware hw ""
    done
    tls_server_stop
done
