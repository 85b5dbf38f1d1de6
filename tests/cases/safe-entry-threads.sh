#!/usr/bin/env bash
# safe-entry-threads: entry patching must not race with threads that exist before the
# preload's constructor. A DT_NEEDED library's constructor runs before it (the loader
# initializes the program's dependencies first), and libspin.so's (tests/vendor/spinlib.c)
# starts threads that call a hooked SSL_* function of the -Bsymbolic OpenSSL copy in a tight
# loop, running the bytes an entry patch rewrites: SSL_free(NULL) (a 3-byte first
# instruction: a patch must replace several) and SSL_connect on a BIO-less SSL (a 5-byte
# first one, which a patch can replace alone). spinmain lets them make more calls, stops
# them and exits 0. Repeated RUNS times per function, traced: no run may crash (a thread
# executing a half-written patch dies of SIGTRAP or SIGSEGV, one entering a patched entry
# whose trampoline page is writable and not executable, because the next function's slot
# is being written, of SIGSEGV) or hang, and every run's output and exit code must equal
# the untraced run's. Whether the entries end up patched or refused with a notice is the
# preload's choice; the pass line tells which (the calls that went through the hook).
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
TLS_DIR=$d # lib-tls.sh's cleanup: removed unless a check failed
tls_need_preload safe-entry-threads
# A crash needs a spinning thread in the few bytes or the page being rewritten at that
# moment: 1-8 % of runs on a busy 2-core machine. 2 x 200 runs take 20-35 s there.
RUNS=${TLSM_SAFE_ENTRY_RUNS:-200}

V=$O/vendor
if ! out=$(VENDOR_ONLY=symbolic "$TLSM_TOP/tests/vendor/build" "$V" 2>&1); then
    if echo "$out" | grep -q 'libssl-dev'; then
        skip "safe-entry-threads: $out"
    else
        fail "safe-entry-threads: vendor fixture did not build: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
    fi
    exit 0
fi
cc=${CC:-cc}
if ! {
    $cc -O2 -Wall -Wextra -fPIC -shared -o "$d/libspin.so" "$TLSM_TOP/tests/vendor/spinlib.c" \
        -Wl,--no-as-needed -L"$V/symbolic" -lvendor -Wl,-rpath,"$V/symbolic" -ldl -lpthread &&
        $cc -O2 -Wall -Wextra -o "$d/spinmain" "$TLSM_TOP/tests/vendor/spinmain.c" \
            -L"$d" -lspin -Wl,-rpath,"$d" -lpthread
} 2>"$d/cc.err"; then
    fail "safe-entry-threads: spinmain does not build: $(head -c 300 "$d/cc.err")"
    exit 0
fi

# spin_runs CALL: spinmain with SPIN_CALL=CALL, once untraced, RUNS times traced.
spin_runs() {
    local call=$1 p=$d/$1 i rc sig crashed=0 hung=0 differed=0 signals='' first_bad='' want_err
    local notice through fn how
    TLS_RUNAS=(env SPIN_CALL="$call")
    tls_run "$p.plain" "" "$d/spinmain"
    TLS_RUNAS=()
    if [ "$(cat "$p.plain.rc")" != 0 ]; then
        fail "safe-entry-threads $call: untraced spinmain failed (exit $(cat "$p.plain.rc")):" \
            "$(head -c 300 "$p.plain.err")"
        return
    fi
    # Crashes (killed by a signal), hangs (the time bound), other differences. Run directly,
    # not through tls_run: a few processes per run keep the runs quick. The braces take
    # bash's own "Segmentation fault" lines. The first run's trace is kept.
    want_err=$(tls_stderr_minus_notes "$p.plain.err")
    for i in $(seq "$RUNS"); do
        { timeout -k 5 "$TLS_RUN_TIMEOUT" env SPIN_CALL="$call" LD_PRELOAD="$TLSM_PRELOAD" \
            TLSMETER_OUT="$p.run.trace" "$d/spinmain" >"$p.run.out" 2>"$p.run.err"; } 2>/dev/null
        rc=$?
        if [ "$i" = 1 ]; then
            cp "$p.run.err" "$p.first.err"
            [ -f "$p.run.trace" ] && mv "$p.run.trace" "$p.first.trace"
        fi
        rm -f "$p".run.trace*
        if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
            hung=$((hung + 1))
        elif [ "$rc" -gt 128 ]; then
            crashed=$((crashed + 1))
            sig=SIG$(kill -l $((rc - 128)) 2>/dev/null || echo "$rc")
            [[ " $signals " == *" $sig "* ]] || signals="$signals $sig"
        elif [ "$rc" = 0 ] && cmp -s "$p.plain.out" "$p.run.out" &&
            [ "$(tls_stderr_minus_notes "$p.run.err")" = "$want_err" ]; then
            continue
        else
            differed=$((differed + 1))
        fi
        if [ -z "$first_bad" ]; then
            first_bad="run $i: exit $rc, $(head -c 200 "$p.run.err" | tr '\n' ' ')"
            cp "$p.run.err" "$p.first-bad.err"
            cp "$p.run.out" "$p.first-bad.out"
        fi
        # A hang costs the whole time bound: two are enough to fail.
        [ "$hung" -ge 2 ] && break
    done
    if [ $((crashed + hung + differed)) != 0 ]; then
        fail "safe-entry-threads $call: of $i traced runs $crashed crashed${signals:+ (${signals# })}," \
            "$hung hung, $differed differed from the untraced run; first: $first_bad"
        return
    fi
    # How the function was handled: its calls through the hook (the entry was patched), or
    # the notice naming it.
    fn=SSL_$call
    through=0
    if [ -f "$p.first.trace" ]; then
        tlsm_jsonl "$p.first.trace"
        through=$("$TLSM_PY" -c 'import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["ev"] == "end":
        print(e.get("hooks", {}).get(sys.argv[2], 0))' "$p.first.trace" "$fn" 2>/dev/null)
    fi
    notice=$(grep -m 1 '^tlsmeter: .*entry points left alone' "$p.first.err" |
        grep -o "$fn ([^)]*)" | head -n 1)
    if [ "${through:-0}" -gt 0 ]; then
        how="$fn patched: $through calls of the first run through the hook"
    else
        how="$fn not patched${notice:+: $notice}"
    fi
    pass "safe-entry-threads $call: $RUNS traced runs with a constructor's threads in $fn:" \
        "no crash, output and exit code as untraced ($how)"
}

spin_runs free
spin_runs connect
