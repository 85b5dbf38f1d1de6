# tests/lib.sh: helpers every test case sources. Results go to $TLSM_RESULTS, one line each:
# "PASS name", "FAIL name: why", "SKIP name: why". Cases must stop every process they start.
: "${TLSM_TOP:?run cases through tests/run}"

# A run in another userland (TLSM_USERLAND, see tests/lib-qemu.sh) labels its results.
TLSM_UL_TAG=${TLSM_USERLAND:+[$TLSM_USERLAND] }
pass() { echo "PASS $TLSM_UL_TAG$*" | tee -a "$TLSM_RESULTS"; }
fail() { echo "FAIL $TLSM_UL_TAG$*" | tee -a "$TLSM_RESULTS"; }
skip() { echo "SKIP $TLSM_UL_TAG$*" | tee -a "$TLSM_RESULTS"; }

# check NAME CMD...: pass if CMD succeeds, fail (with CMD's output) otherwise.
check() {
    local name=$1 out
    shift
    if out=$("$@" 2>&1); then
        pass "$name"
    else
        fail "$name: $(echo "$out" | tail -n 5 | tr '\n' ' ')"
    fi
}

# A fresh work directory for the calling case, removed by the case's own cleanup.
case_dir() {
    local d="$TLSM_WORK/$(basename "$0" .sh)${TLSM_USERLAND:+.$TLSM_USERLAND}"
    rm -rf "$d" && mkdir -p "$d" && echo "$d"
}

# Under SAN builds the sanitizer runtime is preloaded too: keep its reports quiet about
# leaks in the uninstrumented programs we trace, but fail on real errors.
if [ -n "${TLSM_SAN:-}" ]; then
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=0:exitcode=99}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=99}
fi

# Running the target's programs (natively, or under qemu for make check-aarch64).
. "$TLSM_TOP/tests/lib-qemu.sh"

# tlsm_jsonl TEMPLATE: the traces a run left under the TLSMETER_OUT template TEMPLATE (%p and
# %t match anything; a directory: its tlsmeter.*.trace files) in their JSON Lines form, in
# place (tlsmeter-analyze --jsonl: format 2 printed as format 1; mode and owner kept; a
# directory's tlsmeter.PID.trace becomes tlsmeter.PID.jsonl), so a case can grep them as
# format 1 while format 2 is what was written. Files that are not format 2 stay as they are.
tlsm_jsonl() {
    local pat=$1 f tmp
    if [ -d "$pat" ]; then
        pat=$pat/tlsmeter.*.trace
    else
        pat=${pat//%p/*}
        pat=${pat//%t/*}
        pat=${pat//%%/%}
    fi
    for f in $pat $pat.*; do
        [ -f "$f" ] && [ ! -L "$f" ] && [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89544c534d54520a ] ||
            continue
        tmp=$TLSM_WORK/jsonl-tmp.$$ # not beside it: that disk may be full (trace-diskfull)
        if run_tool "$O/tlsmeter-analyze" -q --jsonl "$f" >"$tmp" 2>/dev/null; then
            cat "$tmp" >"$f"
            [[ $f == */tlsmeter.*.trace ]] && mv "$f" "${f%.trace}.jsonl"
        fi
        rm -f "$tmp"
    done
}
# tracecheck.py reads format 2 through tlsmeter-analyze --jsonl: the target's, under qemu.
if under_qemu && [ -d "${TLSM_WORK:-}" ]; then
    target_wrapper "$O/tlsmeter-analyze" "$TLSM_WORK/analyze-target.$$"
    export TLSM_ANALYZER=$TLSM_WORK/analyze-target.$$
fi
