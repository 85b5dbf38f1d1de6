#!/usr/bin/env bash
# safe-entry-threads: entry patching must not race with threads that exist before the
# preload's constructor. A DT_NEEDED library's constructor runs before it (the loader
# initializes the program's dependencies first), and libspin.so's (tests/vendor/spinlib.c)
# starts threads that call the -Bsymbolic OpenSSL copy's own SSL_free(NULL) in a tight
# loop, the bytes an entry patch rewrites. spinmain lets them make more calls, stops them and
# exits 0. Repeated RUNS times traced: no run may crash (a thread executing a half-written
# patch dies of SIGTRAP or SIGSEGV, one entering a patched entry while its trampoline page is
# writable and not executable, because the next function's slot is being written, of SIGSEGV)
# or hang, and every run's output and exit code must equal the untraced run's. Whether the copy's entries end up patched or refused with a notice is
# the preload's choice; the notice, if any, is shown in the pass line.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
TLS_DIR=$d # lib-tls.sh's cleanup: removed unless a check failed
tls_need_preload safe-entry-threads
# A crash needs a spinning thread in the few bytes or the page being rewritten at that
# moment: 1-7 % of runs on a busy 2-core machine. 300 runs take 10-20 s there.
RUNS=${TLSM_SAFE_ENTRY_RUNS:-300}

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

tls_run "$d/plain" "" "$d/spinmain"
if [ "$(cat "$d/plain.rc")" != 0 ]; then
    fail "safe-entry-threads: untraced spinmain failed (exit $(cat "$d/plain.rc")): $(head -c 300 "$d/plain.err")"
    exit 0
fi

# The traced runs: crashes (killed by a signal), hangs (the time bound), other differences.
# Run directly, not through tls_run: a few processes per run keep 300 runs quick. The braces
# take bash's own "Segmentation fault" lines.
crashed=0 hung=0 differed=0 signals='' first_bad=''
want_err=$(tls_stderr_minus_notes "$d/plain.err")
for i in $(seq "$RUNS"); do
    { timeout -k 5 "$TLS_RUN_TIMEOUT" env LD_PRELOAD="$TLSM_PRELOAD" \
        TLSMETER_OUT="$d/run.%p.trace" "$d/spinmain" >"$d/run.out" 2>"$d/run.err"; } 2>/dev/null
    rc=$?
    rm -f "$d"/run.*.trace*
    [ "$i" = 1 ] && cp "$d/run.err" "$d/first.err"
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        hung=$((hung + 1))
    elif [ "$rc" -gt 128 ]; then
        crashed=$((crashed + 1))
        sig=SIG$(kill -l $((rc - 128)) 2>/dev/null || echo "$rc")
        [[ " $signals " == *" $sig "* ]] || signals="$signals $sig"
    elif [ "$rc" = 0 ] && cmp -s "$d/plain.out" "$d/run.out" &&
        [ "$(tls_stderr_minus_notes "$d/run.err")" = "$want_err" ]; then
        continue
    else
        differed=$((differed + 1))
    fi
    if [ -z "$first_bad" ]; then
        first_bad="run $i: exit $rc, $(head -c 200 "$d/run.err" | tr '\n' ' ')"
        cp "$d/run.err" "$d/first-bad.err"
        cp "$d/run.out" "$d/first-bad.out"
    fi
    # A hang costs the whole time bound: two are enough to fail.
    [ "$hung" -ge 2 ] && break
done
notice=$(grep -m 1 '^tlsmeter: .*libvendor.so' "$d/first.err" | head -c 300)
if [ $((crashed + hung + differed)) = 0 ]; then
    pass "safe-entry-threads: $RUNS traced runs with a constructor's threads in SSL_free: no crash," \
        "output and exit code as untraced${notice:+ (notice: $notice)}"
else
    fail "safe-entry-threads: of $i traced runs $crashed crashed${signals:+ (${signals# })}," \
        "$hung hung, $differed differed from the untraced run; first: $first_bad"
fi
