#!/usr/bin/env bash
# analyze-stacks: who is decrypting. Real downloads recorded with TLSMETER_STACKS:
# curl's folded stacks go curl -> libcurl -> SSL_read and their weights sum to the trace's crypto
# ns (sampled or not, by ns or by bytes); a program whose middle library is stripped still gets
# stacks, the stripped frame as module+0x...; a trace symbolized with --sysroot after its files
# moved resolves the same names; a wrong build id or a missing file warns and falls back to
# module+0xoffset; a trace without stacks says so; the SVG flame graph is valid XML and headless
# Chromium draws the SSL_read frame.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload analyze-stacks
A=$O/tlsmeter-analyze
FIX=$TLSM_TOP/tests/fixtures/stacks
CC=${CC:-gcc}

tls_make_file big.bin $((8 * 1024 * 1024 + 777))
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "analyze-stacks: openssl s_server did not start"
    exit 0
fi

folded_sum() { awk '{ s += $NF } END { printf "%d\n", s }' "$1"; }
# json_get FILE EXPR: EXPR over the parsed object d (Python).
json_get() { "$TLSM_PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(eval(sys.argv[2]))' "$1" "$2"; }

# one_trace PATTERN: the single trace a run left, in $T.
one_trace() {
    tls_traces "$1"
    T=${TRACES[0]-}
    [ "${#TRACES[@]}" -eq 1 ]
}

# weights_sum NAME TRACE: folded weights (ns and bytes) equal the JSON totals (the report's
# on-CPU crypto time: switched-out records weigh the same in both).
weights_sum() {
    local name=$1 t=$2 want got wantb gotb
    "$A" --json "$t" >"$t.json" 2>/dev/null
    "$A" --folded "$t" >"$t.folded" 2>"$t.folded.err"
    "$A" --folded --weight bytes "$t" >"$t.bfolded" 2>/dev/null
    want=$(json_get "$t.json" 'd["crypto_ns"]') # on-CPU: the weight every output gives a record
    wantb=$(json_get "$t.json" 'sum(c["bytes"] for c in d["ciphers"])')
    got=$(folded_sum "$t.folded")
    gotb=$(folded_sum "$t.bfolded")
    if [ "$want" -gt 0 ] && [ "$got" = "$want" ] && [ "$gotb" = "$wantb" ]; then
        pass "$name: folded weights sum to the trace's crypto ns ($got) and bytes ($gotb)"
    else
        fail "$name: folded sums ns $got bytes $gotb, the trace has crypto ns $want bytes $wantb"
    fi
}

curl_case() {
    local n=$1 name="analyze-stacks curl TLSMETER_STACKS=$1"
    TLS_ENV=(TLSMETER_STACKS="$n")
    tls_client curl "$TLS_PORT" big.bin "$d/curl$n" "$d/curl$n.%p.jsonl"
    TLS_ENV=()
    if [ "$(cat "$d/curl$n.rc")" != 0 ] || ! one_trace "$d/curl$n.*.jsonl"; then
        fail "$name: download failed or no single trace: $(head -c 300 "$d/curl$n.err")"
        return
    fi
    weights_sum "$name" "$T"
    # Outermost first: the program, libcurl, then SSL_read in libssl, the crypto library last.
    if grep -Eq '^curl;(.*;)?libcurl\.so\.4[!+][^;]*;(.*;)?libssl\.so\.3!SSL_read;(.*;)?libcrypto[^;]*!decrypt AES-128-GCM [0-9]+$' \
        "$T.folded"; then
        pass "$name: folded stack curl -> libcurl -> SSL_read -> libcrypto"
    else
        fail "$name: no curl -> libcurl -> SSL_read line in the folded output: $(head -c 400 "$T.folded")"
    fi
    check "$name: SSL_read caller is libcurl in the JSON summary" test \
        "$(json_get "$T.json" 'd["callers"]["ssl_caller_modules"][0]["name"]')" = libcurl.so.4
    cp "$T" "$d/curl$n.trace"
}
if tls_curl_ok; then
    curl_case 1
    curl_case 100
else
    skip "analyze-stacks curl: $TLS_CURL_SKIP"
fi

# A program whose middle library is stripped: main -> fetch_all -> libmid.so (stripped) -> SSL_read.
dev=$d/dev
mkdir -p "$dev"
# shellcheck disable=SC2046 # pkg-config output is words
if ! $CC -O1 -g -fPIC -shared -o "$dev/libmid.so" "$FIX/libmid.c" $(pkg-config --cflags --libs openssl) ||
    ! strip --strip-all "$dev/libmid.so" ||
    ! $CC -O1 -g -o "$dev/midmain" "$FIX/midmain.c" -L"$dev" -lmid -Wl,-rpath,"$dev"; then
    fail "analyze-stacks stripped: cannot build the test program"
    exit 0
fi
TLS_ENV=(TLSMETER_STACKS=1)
tls_run "$d/mid" "$d/mid.%p.jsonl" "$dev/midmain" "$TLS_PORT" big.bin "$TLS_CERT"
TLS_ENV=()
if [ "$(cat "$d/mid.rc")" != 0 ] || ! one_trace "$d/mid.*.jsonl" || ! grep -q '"ev":"stack"' "$T"; then
    fail "analyze-stacks stripped: run failed or no stacks: $(head -c 300 "$d/mid.err")"
    exit 0
fi
mid=$T
weights_sum "analyze-stacks stripped" "$mid"
check "analyze-stacks stripped: the stripped frame as libmid.so+0x..., between its callers and SSL_read" \
    grep -Eq '^midmain;(.*;)?midmain!main;midmain!fetch_all;libmid\.so!mid_fetch;libmid\.so\+0x[0-9a-f]+;libssl\.so\.3!SSL_read;' \
    "$mid.folded"
check "analyze-stacks stripped: report names libmid.so as the SSL_read caller" bash -c \
    "'$A' '$mid' | grep -Eq '^  SSL_\* called from +libmid\\.so '"

# Without stacks: said on stderr and in the report (--verbose: the default report leaves out
# a callers section with nothing in it); one frame per connection; sums still hold.
tls_run "$d/nostack" "$d/nostack.%p.jsonl" "$dev/midmain" "$TLS_PORT" big.bin "$TLS_CERT"
if one_trace "$d/nostack.*.jsonl"; then
    weights_sum "analyze-stacks no stacks" "$T"
    check "analyze-stacks no stacks: said, one frame per connection" bash -c \
        "grep -q 'no stack events' '$T.folded.err' && grep -Eq '^midmain;conn 1;AES-128-GCM;native [0-9]+$' '$T.folded' &&
         '$A' --verbose '$T' | grep -q '^callers .*no stack events'"
else
    fail "analyze-stacks no stacks: no single trace"
fi

# The same trace symbolized elsewhere: its files moved under a sysroot (the recorded paths are
# gone), every module the trace names copied there, with the host's separate debug files of
# those build ids (libc6-dbg, when installed, names libc's local functions).
root=$d/root
mkdir -p "$root$d"
mv "$dev" "$root$dev"
sed -n 's/.*"ev":"module".*"path":"\([^"]*\)".*/\1/p' "$mid" | while read -r p; do
    [ -e "$root$p" ] || { mkdir -p "$root$(dirname "$p")" && cp "$p" "$root$p"; }
done
sed -n 's/.*"ev":"module".*"build_id":"\([0-9a-f]*\)".*/\1/p' "$mid" | while read -r b; do
    f=/usr/lib/debug/.build-id/${b:0:2}/${b:2}.debug
    [ -n "$b" ] && [ -e "$f" ] && mkdir -p "$root$(dirname "$f")" && cp "$f" "$root$f"
done
"$A" --folded --sysroot "$root" "$mid" >"$d/sysroot.folded" 2>"$d/sysroot.err"
check "analyze-stacks sysroot: same names as where it was recorded" diff -u "$mid.folded" "$d/sysroot.folded"
"$A" --folded "$mid" >"$d/moved.folded" 2>"$d/moved.err"
rc=$?
if [ "$rc" = 0 ] && grep -q "cannot read it.*use --sysroot" "$d/moved.err" &&
    grep -Eq ';midmain\+0x[0-9a-f]+;' "$d/moved.folded" && ! grep -q fetch_all "$d/moved.folded"; then
    pass "analyze-stacks missing files: warned, frames as module+0xoffset"
else
    fail "analyze-stacks missing files: exit $rc, stderr: $(head -c 300 "$d/moved.err")"
fi

# Another build of libmid.so in the sysroot: warned, its frames not named.
$CC -O1 -fPIC -shared -Wl,--build-id=0x0123456789abcdef -o "$root$dev/libmid.so" "$FIX/libmid.c" \
    -lssl -lcrypto
"$A" --folded --sysroot "$root" "$mid" >"$d/other.folded" 2>"$d/other.err"
rc=$?
if [ "$rc" = 0 ] && grep -q "libmid.so: build id 0123456789abcdef, the trace recorded" "$d/other.err" &&
    grep -Eq ';libmid\.so\+0x[0-9a-f]+;libmid\.so\+0x' "$d/other.folded" &&
    ! grep -q 'libmid.so!' "$d/other.folded" && grep -q 'midmain!fetch_all' "$d/other.folded"; then
    pass "analyze-stacks build id mismatch: warned, frames as module+0xoffset"
else
    fail "analyze-stacks build id mismatch: exit $rc, stderr: $(head -c 300 "$d/other.err")"
fi
"$A" --sysroot "$d/no-such-dir" "$mid" >/dev/null 2>"$d/nosys.err"
rc=$?
check "analyze-stacks bad sysroot: exit 2 with the reason" bash -c \
    "[ $rc = 2 ] && grep -q 'no-such-dir: not a directory' '$d/nosys.err'"

# The SVG flame graph: valid XML, and drawn by a browser with the SSL_read frame visible.
# (curl's trace; under a sanitizer build, where curl cannot run, the stripped program's)
svg=$d/curl.svg
if [ -f "$d/curl1.trace" ]; then
    "$A" --flamegraph "$svg" "$d/curl1.trace" >/dev/null
else
    "$A" --flamegraph "$svg" --sysroot "$root" "$mid" >/dev/null 2>&1
fi
"$TLSM_TOP/scripts/install-deps" --extra "chromium libxml2-utils" >/dev/null 2>&1
if command -v xmllint >/dev/null; then
    check "analyze-stacks svg: valid XML (xmllint)" xmllint --noout "$svg"
else
    skip "analyze-stacks svg: xmllint not installed and cannot be"
fi
if command -v chromium >/dev/null; then
    h=$(sed -n 's/^<svg [^>]* height="\([0-9]*\)".*/\1/p' "$svg")
    timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --user-data-dir="$d/chromium" \
        --force-device-scale-factor=1 --window-size="1200,${h:-600}" \
        --screenshot="$d/curl.png" "file://$svg" >"$d/chromium.log" 2>&1
    if [ -s "$d/curl.png" ] && [ "$(tls_size "$d/curl.png")" -gt 5000 ] &&
        out=$("$TLSM_PY" "$TLSM_TOP/tests/tools/png_frame.py" "$d/curl.png" "$svg" 'libssl.so.3!SSL_read'); then
        pass "analyze-stacks svg: Chromium draws it, SSL_read frame visible: $out"
    else
        fail "analyze-stacks svg: screenshot missing or SSL_read frame not drawn: ${out:-$(tail -c 300 "$d/chromium.log")}"
    fi
else
    skip "analyze-stacks svg: chromium not installed and cannot be"
fi
