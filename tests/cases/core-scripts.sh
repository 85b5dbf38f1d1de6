#!/usr/bin/env bash
# core-scripts: the tlsmeter wrapper (record: library lookup, LD_PRELOAD appended, exit status
# and signals kept, where the traces went; analyze; help) and scripts/demo; shellcheck-clean.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload core-scripts
W=$TLSM_TOP/scripts/tlsmeter
lib=${TLSM_PRELOAD##*:}
# Under SAN the sanitizer runtimes must come first: they go in LD_PRELOAD, the wrapper appends.
SANPRE=
[ "$lib" != "$TLSM_PRELOAD" ] && SANPRE=${TLSM_PRELOAD%:*}
export LD_PRELOAD=$SANPRE

# The linter is installed on demand (root), else the check is skipped.
"$TLSM_TOP/scripts/install-deps" --extra shellcheck >/dev/null 2>&1
if command -v shellcheck >/dev/null; then
    (cd "$TLSM_TOP" && check "core-scripts shellcheck" shellcheck -x -P SCRIPTDIR:. \
        scripts/tlsmeter scripts/demo scripts/bench scripts/bench-* scripts/lib-bench.sh \
        tests/lib-tls.sh tests/cases/core-*.sh)
else
    skip "core-scripts shellcheck: shellcheck not installed and cannot be"
fi

check "core-scripts help" bash -c "'$W' --help | grep -q 'tlsmeter record' &&
    '$W' --help | grep -q TLSMETER_OUT"
check "core-scripts ab usage (no command: exit 2)" bash -c "'$W' ab 2>/dev/null; [ \$? -eq 2 ]"
# A run that fails is named with its exit status, its stderr file and that file's last line
# (its table column is all "-").
aberr=$(cd "$d" && "$W" ab --lib "$lib" -- sh -c 'echo boom >&2; exit 3' 2>&1 >/dev/null)
if [[ $aberr == *"the native run exited 3 and left 0 trace(s): see "*"native.err (last line: boom)"* ]]; then
    pass "core-scripts ab: a failed run is named, with its stderr file and last line"
else
    fail "core-scripts ab: a failed run: $(echo "$aberr" | tail -n 3 | tr '\n' ' ')"
fi

# Exit status and a signal death pass through.
"$W" record --lib "$lib" -o "$d/x.%p.jsonl" -- sh -c 'exit 4' 2>/dev/null
rc=$?
# (through sh, so the case's bash does not print "Terminated")
rc2=$(sh -c '"$@" >/dev/null 2>&1; echo $?' sh "$W" record --lib "$lib" -o "$d/x.%p.jsonl" -- \
    sh -c 'kill -TERM $$')
if [ "$rc" = 4 ] && [ "$rc2" = 143 ]; then
    pass "core-scripts exit status"
else
    fail "core-scripts exit status: exit 4 came back as $rc, SIGTERM as $rc2 (want 143)"
fi

# No trace: the wrapper says why as far as it can tell, never "see the warning above" when
# there is none: a program without TLS, a command that does not exist.
notls=$("$W" record --lib "$lib" -o "$d/n.%p.trace" -- ls / 2>&1 >/dev/null)
nocmd=$("$W" record --lib "$lib" -o "$d/n.%p.trace" -- "$d/nonexistent" 2>&1 >/dev/null)
if [[ $notls == *"ls made no TLS connection through OpenSSL"* && $notls != *"warning above"* &&
    $nocmd == *"did not start (exit status 127)"* ]]; then
    pass "core-scripts record without a trace: says why (no TLS; a command that did not start)"
else
    fail "core-scripts record without a trace: ls / said '$notls'; a missing command '$nocmd'"
fi

# make install into a private prefix never runs the host's ldconfig (a stand-in on PATH
# notes any call); the wrapper finds the library there.
mkdir -p "$d/fakebin"
printf '#!/bin/sh\necho "$@" >>%s/ldconfig.calls\n' "$d" >"$d/fakebin/ldconfig"
chmod +x "$d/fakebin/ldconfig"
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL PATH="$d/fakebin:$PATH" make -s -C "$TLSM_TOP" \
    --no-print-directory O="$O" SAN="${TLSM_SAN:-}" install PREFIX="$d/opt" >"$d/install.log" 2>&1 &&
    [ -f "$d/opt/lib/libtlsmeter.so" ] && [ ! -e "$d/ldconfig.calls" ]; then
    pass "core-scripts make install PREFIX=private: installed, no ldconfig"
else
    fail "core-scripts make install PREFIX=private: $(tail -n 2 "$d/install.log" | tr '\n' ' ')" \
        "ldconfig calls: $(cat "$d/ldconfig.calls" 2>/dev/null)"
fi

# An existing LD_PRELOAD stays first; the library is found in an install prefix.
mkdir -p "$d/prefix/bin" "$d/prefix/lib"
cp "$W" "$d/prefix/bin/tlsmeter"
cp "$lib" "$d/prefix/lib/libtlsmeter.so"
# shellcheck disable=SC2016 # expanded by the inner sh
out=$(LD_PRELOAD=${SANPRE:+$SANPRE:}libm.so.6 "$d/prefix/bin/tlsmeter" record -q -- \
    sh -c 'echo "$LD_PRELOAD"')
if [ "$out" = "${SANPRE:+$SANPRE:}libm.so.6:$d/prefix/lib/libtlsmeter.so" ]; then
    pass "core-scripts preload order and install prefix"
else
    fail "core-scripts preload order and install prefix: LD_PRELOAD in the command was '$out'"
fi

# A traced download through the wrapper: same bytes, one valid trace, named on stderr.
tls_make_file w.bin 300007
if tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    if [ "$TLS_DL" = curl ]; then
        dl=(curl -sS --cacert "$TLS_CERT" -o "$d/w.body" "https://127.0.0.1:$TLS_PORT/w.bin")
    else
        dl=("$TLSM_PROGS/mtclient" -q -p "$TLS_PORT" -c "$TLS_CERT" -t 1 -n 1 -o "$d/w.body"
            /w.bin)
    fi
    (cd "$d" && "$W" record --lib "$lib" -- "${dl[@]}" >"$d/w.out" 2>"$d/w.err")
    echo $? >"$d/w.rc"
    tls_server_stop
    tls_traces "$d/tlsmeter.*.trace"
    name="core-scripts record $TLS_DL"
    if [ "$(cat "$d/w.rc")" != 0 ] || ! cmp -s "$d/w.body" "$TLS_WWW/w.bin"; then
        fail "$name: exit $(cat "$d/w.rc"), body differs or missing"
    elif [ "${#TRACES[@]}" -ne 1 ]; then
        fail "$name: ${#TRACES[@]} traces in the cwd, want 1"
    elif ! grep -q "^tlsmeter: trace: ./$(basename "${TRACES[0]}")" "$d/w.err"; then
        fail "$name: stderr does not name the trace: $(head -c 200 "$d/w.err")"
    else
        tls_trace_check "$name" "${TRACES[0]}" --body 300007 --full-read --conns 1
        if [ -x "$O/tlsmeter-analyze" ]; then
            check "core-scripts analyze" bash -c "'$W' analyze '${TRACES[0]}' | grep -q AES-128-GCM"
        else
            skip "core-scripts analyze: $O/tlsmeter-analyze not built"
        fi
    fi
else
    fail "core-scripts record: openssl s_server did not start"
fi

# scripts/demo end to end, small, in its own build folder (links to the real artifacts).
if ! tls_curl_ok; then
    skip "core-scripts demo: $TLS_CURL_SKIP"
    exit 0
fi
mkdir -p "$d/o"
ln -s "$lib" "$d/o/libtlsmeter.so"
[ -x "$O/tlsmeter-analyze" ] && ln -s "$O/tlsmeter-analyze" "$d/o/tlsmeter-analyze"
if O=$d/o DEMO_MIB=4 timeout -k 5 120 "$TLSM_TOP/scripts/demo" >"$d/demo.out" 2>&1 &&
    grep -q 'download verified' "$d/demo.out"; then
    pass "core-scripts demo"
else
    fail "core-scripts demo: $(tail -n 3 "$d/demo.out" | tr '\n' ' ')"
fi
