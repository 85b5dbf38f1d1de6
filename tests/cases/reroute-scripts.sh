#!/usr/bin/env bash
# reroute-scripts: `tlsmeter ab` end to end (three traced runs of one download, the table and
# the analyzer's comparison, the native run's exit code kept, a differing run reported), and
# the reroute scripts pass shellcheck. The demo's A/B part runs in core-scripts' demo check.
# Nothing here is timed. Downloads with $TLS_DL (curl, else our C client: under ASan).
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload reroute-scripts
W=$TLSM_TOP/scripts/tlsmeter
lib=${TLSM_PRELOAD##*:}
# Under SAN the sanitizer runtimes must come first: they go in LD_PRELOAD, the wrapper appends.
[ "$lib" != "$TLSM_PRELOAD" ] && export LD_PRELOAD=${TLSM_PRELOAD%:*}

"$TLSM_TOP/scripts/install-deps" --extra shellcheck >/dev/null 2>&1
if command -v shellcheck >/dev/null; then
    (cd "$TLSM_TOP" && check "reroute-scripts shellcheck" shellcheck -x -P SCRIPTDIR:. \
        scripts/tlsmeter-ab scripts/bench-reroute tests/cases/reroute-*.sh)
else
    skip "reroute-scripts shellcheck: shellcheck not installed and cannot be"
fi

check "reroute-scripts ab usage" bash -c "'$W' ab; [ \$? -eq 2 ] && '$W' ab --help | grep -q -- --modes"

if [ ! -x "$O/tlsmeter-analyze" ]; then
    skip "reroute-scripts ab: $O/tlsmeter-analyze not built"
    exit 0
fi
tls_make_file ab.bin 700001
if ! tls_server_start 1.3 TLS_AES_256_GCM_SHA384; then
    fail "reroute-scripts ab: openssl s_server did not start"
    exit 0
fi

# ab_download: a download through `tlsmeter ab`: exit 0, the body intact in every run, one
# trace per mode, records on each mode's path, and the analyzer's comparison printed.
ab_download() {
    local dl rc m
    if [ "$TLS_DL" = curl ]; then
        dl=(curl -sS --cacert "$TLS_CERT" -o "$d/ab.body" "https://127.0.0.1:$TLS_PORT/ab.bin")
    else
        dl=("$TLSM_PROGS/mtclient" -q -p "$TLS_PORT" -c "$TLS_CERT" -t 1 -n 1 -o "$d/ab.body"
            /ab.bin)
    fi
    timeout -k 5 300 "$W" ab --lib "$lib" --analyzer "$O/tlsmeter-analyze" -o "$d/ab" \
        --check "$d/ab.body" -- "${dl[@]}" >"$d/ab.out" 2>"$d/ab.err"
    rc=$?
    if [ "$rc" != 0 ] || ! cmp -s "$d/ab.body" "$TLS_WWW/ab.bin"; then
        fail "reroute-scripts ab $TLS_DL: exit $rc, body $(cmp "$d/ab.body" "$TLS_WWW/ab.bin" 2>&1)" \
            "$(tail -n 3 "$d/ab.err" | tr '\n' ' ')"
    elif ! grep -Eq '^decrypt path +native +soft +hw$' "$d/ab.out" ||
        ! grep -Eq '^ab.body sha256 +[0-9a-f]{12} +same +same$' "$d/ab.out" ||
        ! grep -Eq '^implementation +[a-z]+ +table +hardware$' "$d/ab.out" ||
        ! grep -q '^crypto vs native ' "$d/ab.out" ||
        [ "$(grep -c '^== tlsmeter analyze --compare native ' "$d/ab.out")" != 2 ]; then
        fail "reroute-scripts ab $TLS_DL: the table or the comparison is not as expected:" \
            "$(head -n 14 "$d/ab.out" | tr -s ' ' | tr '\n' '|')"
    elif grep -q DIFFERS "$d/ab.out" || grep -q 'differs\|exited' "$d/ab.err"; then
        fail "reroute-scripts ab $TLS_DL: a run differs: $(grep 'differs\|exited' "$d/ab.err")"
    else
        for m in native soft hw; do
            tls_traces "$d/ab/$m.*.jsonl"
            if [ "${#TRACES[@]}" -ne 1 ]; then
                fail "reroute-scripts ab $TLS_DL $m: ${#TRACES[@]} traces, want 1"
                continue
            fi
            tls_trace_check "reroute-scripts ab $TLS_DL $m" "${TRACES[0]}" --body 700001 \
                --full-read --conns 1 --path "$m"
        done
    fi
}
if tls_mode_ok hw; then
    ab_download
else
    skip "reroute-scripts ab $TLS_DL: $TLS_MODE_SKIP"
fi
tls_server_stop

# The native run's exit code is kept; a run whose exit code or stdout differs is reported.
# shellcheck disable=SC2016 # expanded by the inner sh
"$W" ab --lib "$lib" --analyzer "$O/tlsmeter-analyze" -o "$d/ex" -- \
    sh -c 'echo "$TLSMETER_CRYPTO"; [ "$TLSMETER_CRYPTO" = hw ] && exit 3; exit 5' \
    >"$d/ex.out" 2>"$d/ex.err"
rc=$?
if [ "$rc" = 5 ] && grep -q 'hw run exited 3, the native run 5' "$d/ex.err" &&
    grep -q "soft run's stdout differs" "$d/ex.err" && ! grep -q 'soft run exited [0-9]*, the native' "$d/ex.err"; then
    pass "reroute-scripts ab exit code and differences"
else
    fail "reroute-scripts ab exit code and differences: exit $rc (want 5):" \
        "$(grep '^tlsmeter ab: [a-z]* run' "$d/ex.err" | tr '\n' ' ')"
fi
