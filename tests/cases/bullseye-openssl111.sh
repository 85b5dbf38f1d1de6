#!/usr/bin/env bash
# bullseye-openssl111: Debian 11's own userland (glibc 2.31, OpenSSL 1.1.1w
# `openssl s_client`, run through its own ld-2.31.so; arm64 under qemu-aarch64-static -L)
# with the dist library (make dist) preloaded, downloading 16 MiB from a local s_server:
# the program runs and its output is unchanged (sha256, exit code, stderr apart from
# tlsmeter's lines), natively, with the CPU's AES masked, and masked + TLSMETER_CRYPTO=hw.
# What the trace says of the 1.1.1 copy (records >= 1 per 16 KiB, read bytes exact, class
# hardware; masked: table and the software-aes verdict; masked + hw: path hw) is checked
# once the trace's lib event of that copy is traced (no left_alone); until then those
# checks skip, saying so. TLSMETER_CPUTIME=rseq: glibc 2.31 registers no rseq area, so the
# trace header says wall and why.
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
N=bullseye-openssl111
bz_setup "$N" "$(target_arch)"
tls_analyzer "$N"
tlsm_soft_mask "$BZ_ARCH" # the software mask (scripts/tlsmeter-mask.sh)
MASK="$TLSM_MASK_VAR=$TLSM_MASK"
BODY=$((16 * 1024 * 1024))
tls_make_file big.bin "$BODY"
want_sha=$(tls_sha "$TLS_WWW/big.bin")

# run NAME VAR=VAL...: a traced download; checks the program's side; sets TRACE ("" after a
# failure).
run() {
    local tag=$1 p=$d/$1.$suite why
    shift
    TRACE=
    bz_get "$p" "$TLS_PORT" big.bin LD_PRELOAD="$BZ_LIB" TLSMETER_OUT="$p.%p.jsonl" "$@"
    if ! why=$(tls_same_run x "$d/plain.$suite" "$p"); then
        fail "$N $tag $suite: $why"
        return
    fi
    # Quiet: each thing tlsmeter cannot do here is said once (a left-alone copy; with hw, a
    # backend that does not load on this glibc), never once per call or record.
    local notes
    notes=$(tls_notes "$p.err")
    if [ "$notes" -gt 2 ] || [ -n "$(grep '^tlsmeter:' "$p.err" | sort | uniq -d)" ]; then
        fail "$N $tag $suite: $notes tlsmeter lines on stderr, want each reason once, at most two: $(grep '^tlsmeter:' "$p.err" | head -c 300)"
        return
    fi
    tls_traces "$p.*.jsonl"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "$N $tag $suite: ${#TRACES[@]} trace files, want 1"
        return
    fi
    TRACE=${TRACES[0]}
    pass "$N $tag $suite: Debian 11 s_client ran, output unchanged (sha256 ${want_sha:0:12}, exit 0, $notes notices)"
}

for s in "1.3 TLS_AES_128_GCM_SHA256 AES-128-GCM" "1.2 ECDHE-RSA-AES128-GCM-SHA256 AES-128-GCM"; do
    read -r proto suite cipher <<<"$s"
    if ! tls_server_start "$proto" "$suite"; then
        fail "$N $suite: openssl s_server did not start"
        continue
    fi
    bz_get "$d/plain.$suite" "$TLS_PORT" big.bin
    if [ "$(cat "$d/plain.$suite.rc")" != 0 ] || [ "$(tls_sha "$d/plain.$suite.body")" != "$want_sha" ]; then
        fail "$N $suite: Debian 11 s_client failed without the preload (exit $(cat "$d/plain.$suite.rc")): $(head -c 300 "$d/plain.$suite.err")"
        tls_server_stop
        continue
    fi
    run native
    if [ -n "$TRACE" ]; then
        if bz_traced "$TRACE"; then
            tls_trace_check "$N native records $suite" "$TRACE" --got "$(cat "$d/native.$suite.got")" \
                --full-read --body "$BODY" --cipher "$cipher" --tls "$proto" --conns 1
            bz_impl_check "$N native is hardware $suite" "$TRACE" hardware
        else
            skip "$N native records/class $suite: $BZ_WHY"
        fi
    fi
    run masked "$MASK"
    if [ -n "$TRACE" ]; then
        if bz_traced "$TRACE"; then
            bz_impl_check "$N masked is table + software-aes $suite" "$TRACE" table software-aes
        else
            skip "$N masked class $suite: $BZ_WHY"
        fi
    fi
    if tls_mode_ok hw; then
        run masked-hw "$MASK" TLSMETER_CRYPTO=hw
        if [ -n "$TRACE" ]; then
            if bz_traced "$TRACE"; then
                tls_trace_check "$N masked hw records on path hw $suite" "$TRACE" \
                    --got "$(cat "$d/masked-hw.$suite.got")" --full-read --body "$BODY" \
                    --cipher "$cipher" --tls "$proto" --conns 1 --path hw
            else
                skip "$N masked hw path $suite: $BZ_WHY"
            fi
        fi
    else
        skip "$N masked hw $suite: $TLS_MODE_SKIP"
    fi
    # glibc 2.31 registers no rseq area: the method says so and falls back to wall time.
    if [ "$proto" = 1.3 ]; then
        run rseq TLSMETER_CPUTIME=rseq
        if [ -n "$TRACE" ]; then
            got="$(bz_header "$TRACE" cputime) / $(bz_header "$TRACE" cputime_why)"
            if [[ $got == "wall / "*"rseq: not registered by glibc"* ]]; then
                pass "$N TLSMETER_CPUTIME=rseq on glibc 2.31: $got"
            else
                fail "$N TLSMETER_CPUTIME=rseq on glibc 2.31: cputime $got, want wall, rseq not registered"
            fi
        fi
    fi
    tls_server_stop
done
