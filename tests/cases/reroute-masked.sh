#!/usr/bin/env bash
# reroute-masked: the OTA case. A program whose own libcrypto runs software AES
# (the software mask of scripts/tlsmeter-mask.sh: AES-NI, VAES, PCLMULQDQ and VPCLMULQDQ off) is
# traced natively and with TLSMETER_CRYPTO=hw. The analyzer must classify the native trace as table and the
# rerouted one as hardware (--json `impl` and the per-cipher/path entries), and --compare must
# put the two side by side; an unmasked program rerouted to soft classifies as table. On aarch64
# the mask is OPENSSL_armcap=0 (AES and PMULL off); downloads with $TLS_DL (curl, else our C
# client: under ASan and under qemu).
# tlsm-arch: x86_64 aarch64
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=scripts/tlsmeter-mask.sh
. "$TLSM_TOP/scripts/tlsmeter-mask.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload reroute-masked
tls_analyzer "reroute-masked"

tlsm_soft_mask "$(target_arch)" # the software mask (scripts/tlsmeter-mask.sh)
MASK="$TLSM_MASK_VAR=$TLSM_MASK"
BODY=$((2 * 1024 * 1024 + 55))
under_qemu && BODY=$((1024 * 1024 + 55)) # emulated: half the bytes
tls_make_file m.bin "$BODY"

# run_ab TAG MODE VAR=VALUE...: a traced $TLS_DL download; sets TRACE, returns 1 after a failure.
run_ab() {
    local tag=$1 mode=$2 why p=$d/$1.$suite
    shift 2
    TLS_ENV=("TLSMETER_CRYPTO=$mode" "$@")
    tls_client "$TLS_DL" "$TLS_PORT" m.bin "$p" "$p.trace.%p.jsonl"
    TLS_ENV=()
    if ! why=$(tls_same_run "$tag" "$d/plain.$suite" "$p"); then
        fail "reroute-masked $tag $suite: $why"
        return 1
    fi
    tls_traces "$p.trace.*.jsonl"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "reroute-masked $tag $suite: ${#TRACES[@]} trace files, want 1"
        return 1
    fi
    TRACE=${TRACES[0]}
}

# classified NAME WANT-IMPL PATH CIPHER TRACE: tlsmeter-analyze --json TRACE says WANT-IMPL
# overall and for (CIPHER, PATH), and every record is on PATH.
classified() {
    local name=$1 trace=$5
    if ! "$A" --json "$trace" >"$trace.summary.json" 2>"$trace.summary.err"; then
        fail "$name: tlsmeter-analyze failed: $(head -c 200 "$trace.summary.err")"
        return
    fi
    tls_check "$name" "$TLSM_PY" -c 'import json, sys
s = json.load(open(sys.argv[1]))
want, path, cipher = sys.argv[2:]
errs = []
if s.get("impl") != want:
    errs.append("impl %r, want %s" % (s.get("impl"), want))
if set(s.get("paths", {})) != {path}:
    errs.append("paths %r, want only %s" % (s.get("paths"), path))
rows = [c for c in s.get("ciphers", []) if c.get("cipher") == cipher and c.get("path") == path]
if not rows or any(c.get("impl") != want for c in rows):
    errs.append("ciphers %s/%s: %r" % (cipher, path,
                                       [(c.get("impl"), c.get("impl_detail")) for c in rows]))
sys.exit("; ".join(errs) if errs else 0)' "$trace.summary.json" "$2" "$3" "$4"
}

for s in "1.3 TLS_AES_128_GCM_SHA256 AES-128-GCM" "1.2 ECDHE-RSA-AES256-GCM-SHA384 AES-256-GCM"; do
    read -r proto suite cipher <<<"$s"
    if ! tls_server_start "$proto" "$suite"; then
        fail "reroute-masked $suite: openssl s_server did not start"
        continue
    fi
    tls_client "$TLS_DL" "$TLS_PORT" m.bin "$d/plain.$suite"
    if [ "$(cat "$d/plain.$suite.rc")" != 0 ]; then
        fail "reroute-masked $suite: $TLS_DL failed without the preload"
        tls_server_stop
        continue
    fi
    if ! tls_mode_ok hw; then
        skip "reroute-masked $suite: $TLS_MODE_SKIP"
        tls_server_stop
        continue
    fi
    native='' hw=''
    if run_ab masked-native native "$MASK"; then
        native=$TRACE
        classified "reroute-masked masked native is table $suite" table native "$cipher" "$native"
    fi
    if run_ab masked-hw hw "$MASK"; then
        hw=$TRACE
        tls_trace_check "reroute-masked masked hw records $suite" "$hw" --full-read \
            --body "$BODY" --cipher "$cipher" --tls "$proto" --conns 1 --path hw \
            --reroute 'routed>0' --reroute fallback=0
        classified "reroute-masked masked hw is hardware $suite" hardware hw "$cipher" "$hw"
    fi
    if run_ab soft soft; then
        classified "reroute-masked unmasked soft is table $suite" table soft "$cipher" "$TRACE"
    fi
    if [ -n "$native" ] && [ -n "$hw" ]; then
        "$A" --json --compare "$native" "$hw" >"$d/compare.json" 2>&1
        tls_check "reroute-masked compare $suite" "$TLSM_PY" -c 'import json, sys
c = json.load(open(sys.argv[1]))
got = (c["a"].get("impl"), c["b"].get("impl"))
sys.exit(0 if got == ("table", "hardware") and "ratio_b_over_a" in c
         else "compare --json: impl a/b %r, want table/hardware" % (got,))' "$d/compare.json"
    fi
    tls_server_stop
done
