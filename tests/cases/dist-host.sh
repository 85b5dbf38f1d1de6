#!/usr/bin/env bash
# dist-host: The dist library (make dist: built against Debian 11's glibc 2.31,
# with run-time fallbacks for what newer glibc offers) preloaded on this Debian 12 host, into
# the host's own OpenSSL 3 clients: it must trace as the host build does. 4 MiB over TLS 1.3
# and 1.2: output unchanged, every byte and record in the trace, class hardware; with the
# CPU's AES masked class table + the software-aes verdict; masked + TLSMETER_CRYPTO=hw on
# path hw; TLSMETER_CPUTIME=rseq uses this glibc's rseq area. Under qemu (make check-aarch64): the aarch64 dist library, the sysroot's
# programs, OPENSSL_armcap=0.
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
N=dist-host
bz_setup "$N" "$(target_arch)"
# Under SAN builds the sanitizer runtimes stay first (the test programs are instrumented).
TLS_PRELOAD=$BZ_LIB
[[ $TLSM_PRELOAD == *:* ]] && TLS_PRELOAD=${TLSM_PRELOAD%:*}:$BZ_LIB
tls_analyzer "$N"
tlsm_soft_mask "$BZ_ARCH" # the software mask (scripts/tlsmeter-mask.sh)
MASK="$TLSM_MASK_VAR=$TLSM_MASK"
BODY=$((4 * 1024 * 1024 + 321))
tls_make_file big.bin "$BODY"
want_sha=$(tls_sha "$TLS_WWW/big.bin")

# run TAG VAR=VAL...: a traced $TLS_DL download; sets TRACE ("" after a failure).
run() {
    local tag=$1 p=$d/$1.$suite why
    shift
    TRACE=
    TLS_ENV=("$@")
    tls_client "$TLS_DL" "$TLS_PORT" big.bin "$p" "$p.%p.jsonl"
    TLS_ENV=()
    if ! why=$(tls_same_run x "$d/plain.$suite" "$p"); then
        fail "$N $tag $suite: $why"
        return
    fi
    tls_traces "$p.*.jsonl"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "$N $tag $suite: ${#TRACES[@]} trace files, want 1 ($(head -c 200 "$p.err"))"
        return
    fi
    TRACE=${TRACES[0]}
    GOT=$(cat "$p.got")
}

for s in "1.3 TLS_AES_128_GCM_SHA256 AES-128-GCM" "1.2 ECDHE-RSA-AES256-GCM-SHA384 AES-256-GCM"; do
    read -r proto suite cipher <<<"$s"
    if ! tls_server_start "$proto" "$suite"; then
        fail "$N $suite: openssl s_server did not start"
        continue
    fi
    tls_client "$TLS_DL" "$TLS_PORT" big.bin "$d/plain.$suite"
    if [ "$(cat "$d/plain.$suite.rc")" != 0 ] || [ "$(tls_sha "$d/plain.$suite.body")" != "$want_sha" ]; then
        fail "$N $suite: $TLS_DL failed without the preload"
        tls_server_stop
        continue
    fi
    run native
    if [ -n "$TRACE" ]; then
        tls_trace_check "$N native $TLS_DL $suite: output unchanged, records" "$TRACE" \
            --got "$GOT" --full-read --body "$BODY" --cipher "$cipher" --tls "$proto" --conns 1
        bz_impl_check "$N native is hardware $suite" "$TRACE" hardware
    fi
    run masked "$MASK"
    [ -n "$TRACE" ] && bz_impl_check "$N masked is table + software-aes $suite" "$TRACE" table software-aes
    if tls_mode_ok hw; then
        run masked-hw "$MASK" TLSMETER_CRYPTO=hw
        [ -n "$TRACE" ] && tls_trace_check "$N masked hw on path hw $suite" "$TRACE" \
            --got "$GOT" --full-read --body "$BODY" --cipher "$cipher" --tls "$proto" \
            --conns 1 --path hw
    else
        skip "$N masked hw $suite: $TLS_MODE_SKIP"
    fi
    # rseq through the running glibc's __rseq_offset/__rseq_size (the build's glibc has
    # none): this glibc registers rseq, qemu-user has none.
    if [ "$proto" = 1.3 ]; then
        run rseq TLSMETER_CPUTIME=rseq
        if [ -n "$TRACE" ]; then
            want=rseq
            under_qemu && want=wall
            got=$(bz_header "$TRACE" cputime)
            if [ "$got" = "$want" ]; then
                pass "$N TLSMETER_CPUTIME=rseq: cputime $got ($(bz_header "$TRACE" cputime_why))"
            else
                fail "$N TLSMETER_CPUTIME=rseq: cputime '$got', want $want: $(bz_header "$TRACE" cputime_why)"
            fi
        fi
    fi
    tls_server_stop
done
