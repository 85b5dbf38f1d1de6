#!/usr/bin/env bash
# blind-php: PHP loads its extensions RTLD_DEEPBIND, so libcurl.so.4 (needed
# by curl.so) binds SSL_read straight to libssl past the hooks. tlsmeter rewrites
# those GOT slots right after the dlopen, so a curl_exec download from openssl s_server runs
# unchanged and has its reads (covering the body, every record inside one), a fwd event from
# libcurl with reach "got", and no blind "calls" entry or notice. With TLSMETER_PATCH=0 the
# issue-11 detector is what is left: records without reads, libcurl named (blind what "calls",
# reason calls_elsewhere, needed_by curl.so, scope deepbind), one notice, and the analyzer's
# reads-bypassed verdict. The detector must be specific: a download through PHP's openssl
# stream wrapper (PHP's own SSL_read calls, which the hooks see) keeps its reads, gets no
# notice and no "records without reads" verdict.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
"$TLSM_TOP/scripts/install-deps" --extra "php-cli php-curl" >/dev/null 2>&1
d=$(case_dir)
tls_init "$d"
tls_need_preload blind-php
if under_qemu; then
    skip "blind-php: no $(target_arch) PHP under qemu"
    exit 0
fi
if ! command -v php >/dev/null || ! php -r 'exit(function_exists("curl_init") ? 0 : 1);'; then
    skip "blind-php: php-cli with the curl extension is not installed"
    exit 0
fi
if [[ ${TLSM_SAN:-} == *address* ]]; then
    skip "blind-php: ASan's dlopen refuses RTLD_DEEPBIND, which PHP loads every extension with (google/sanitizers#611)"
    exit 0
fi
ANALYZE=$O/tlsmeter-analyze
SIZE=$((3 * 1024 * 1024 + 333))
tls_make_file big.bin "$SIZE"
want=$(tls_sha "$TLS_WWW/big.bin")
if ! tls_server_start 1.3 TLS_AES_256_GCM_SHA384; then
    fail "blind-php: openssl s_server did not start"
    exit 0
fi

cat >"$d/curl.php" <<'EOF'
<?php
$c = curl_init("https://127.0.0.1:" . $argv[1] . "/big.bin");
curl_setopt($c, CURLOPT_RETURNTRANSFER, true);
curl_setopt($c, CURLOPT_CAINFO, $argv[2]);
$b = curl_exec($c);
if ($b === false) { fwrite(STDERR, curl_error($c) . "\n"); exit(3); }
echo strlen($b), " ", hash("sha256", $b), "\n";
EOF
cat >"$d/stream.php" <<'EOF'
<?php
$ctx = stream_context_create(["ssl" => ["cafile" => $argv[2], "peer_name" => "localhost"]]);
$b = file_get_contents("https://127.0.0.1:" . $argv[1] . "/big.bin", false, $ctx);
if ($b === false) exit(3);
echo strlen($b), " ", hash("sha256", $b), "\n";
EOF

# run NAME TAG [ENV...]: the script NAME.php untraced and traced (with ENV); same output and
# exit code, the right body. Files are $d/NAME$TAG.*.
run() {
    local p=$d/$1$2 script=$d/$1.php
    TLS_ENV=("${@:3}")
    tls_run "$p.plain" "" php "$script" "$TLS_PORT" "$TLS_CERT"
    tls_run "$p.traced" "$p.%p.jsonl" php "$script" "$TLS_PORT" "$TLS_CERT"
    TLS_ENV=()
    if ! why=$(tls_same_run x "$p.plain" "$p.traced"); then
        fail "blind-php $1$2: $why"
        return 1
    fi
    if [ "$(cat "$p.traced.out")" != "$SIZE $want" ]; then
        fail "blind-php $1$2: downloaded $(cat "$p.traced.out"), want $SIZE $want"
        return 1
    fi
    tls_traces "$p.*.jsonl"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "blind-php $1$2: ${#TRACES[@]} traces, want 1"
        return 1
    fi
    pass "blind-php $1$2: output and exit code unchanged, sha256 right"
}

# The GOT slots rewritten after curl.so's dlopen: libcurl's reads are traced.
if run curl ""; then
    n=$(tls_notes "$d/curl.traced.err")
    if [ "$n" -eq 0 ]; then
        pass "blind-php curl: no notice (libcurl's calls reach the hooks)"
    else
        fail "blind-php curl: $n notices: $(grep -m2 '^tlsmeter:' "$d/curl.traced.err" | head -c 300)"
    fi
    tls_check "blind-php curl trace: libcurl's reads carry the body, reached through its GOT" \
        "$TLSM_PY" - "${TRACES[0]}" "$SIZE" <<'EOF'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
size = int(sys.argv[2])
reads = [e for e in ev if e["ev"] == "read"]
got = sum(e["got"] for e in reads if e["got"] > 0)
app = [e for e in ev if e["ev"] == "rec" and e.get("dir", "in") == "in" and e.get("type") == 23]
assert got >= size, "reads returned %d bytes, body is %d" % (got, size)
outside = [r for r in app if r["read"] == 0]
assert len(app) >= 100 and not outside, "%d of %d records outside reads" % (len(outside), len(app))
fwd = [e for e in ev if e["ev"] == "fwd" and e["from"].endswith("/libcurl.so.4")]
assert len(fwd) == 1 and fwd[0].get("reach") == "got" and "SSL_read" in fwd[0]["fns"], fwd
assert "libssl.so.3" in fwd[0]["to"], fwd[0]["to"]
calls = [e for e in ev if e["ev"] == "blind" and e.get("what") == "calls"]
assert not calls, "blind calls events: %r" % calls
end = ev[-1]
assert end["ev"] == "end" and not [x for x in end["blind"] if x["what"] == "calls"], end["blind"]
print("ok %d reads, %d bytes, %d records inside reads, fwd %s" % (len(reads), got, len(app), fwd[0]["fns"]))
EOF
fi

# TLSMETER_PATCH=0: nothing rewritten; the issue-11 detector names libcurl.
if run curl -nopatch TLSMETER_PATCH=0; then
    n=$(tls_notes "$d/curl-nopatch.traced.err")
    if [ "$n" -ge 1 ] && grep -q '^tlsmeter: .*libcurl\.so\.4 (needed by .*/curl\.so) calls SSL_read.* past tlsmeter.s hooks (loaded RTLD_DEEPBIND)' "$d/curl-nopatch.traced.err"; then
        pass "blind-php curl-nopatch: notice: $(grep -m1 'libcurl' "$d/curl-nopatch.traced.err" | head -c 200)"
    else
        fail "blind-php curl-nopatch: no notice naming libcurl ($n tlsmeter lines): $(head -c 300 "$d/curl-nopatch.traced.err")"
    fi
    tls_check "blind-php curl-nopatch trace: records without reads, blind calls entry for libcurl" \
        "$TLSM_PY" - "${TRACES[0]}" <<'EOF'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
recs = [e for e in ev if e["ev"] == "rec" and e.get("dir", "in") == "in" and e.get("type") == 23]
reads = [e for e in ev if e["ev"] == "read"]
assert len(recs) >= 100, "only %d application-data records" % len(recs)
assert all(r["read"] == 0 for r in recs), "records inside a traced read"
assert not reads, "%d read events: libcurl's SSL_read reached the hooks?" % len(reads)
bl = [e for e in ev if e["ev"] == "blind" and e.get("what") == "calls"
      and e["path"].endswith("/libcurl.so.4")]
assert len(bl) == 1, "want one blind calls event for libcurl, got %r" % bl
b = bl[0]
assert b["reasons"] == ["calls_elsewhere"], b["reasons"]
assert "SSL_read" in b["fns"], b["fns"]
assert b["scope"] == "deepbind", b["scope"]
assert b["needed_by"].endswith("/curl.so"), b["needed_by"]
assert "libssl.so.3" in b["bound_to"], b["bound_to"]
assert b["got_tlsmeter"] == 0 and b["got_elsewhere"] >= 1, b
end = ev[-1]
assert end["ev"] == "end"
assert any(x["what"] == "calls" and x["path"] == b["path"] for x in end["blind"]), end["blind"]
print("ok %d records, 0 reads, %s" % (len(recs), b["fns"]))
EOF
    "$ANALYZE" "${TRACES[0]}" >"$d/curl-nopatch.report" 2>"$d/curl-nopatch.report.err"
    if grep -q '\[reads-bypassed\] .*records without reads: libcurl\.so\.4 (needed by curl\.so, loaded RTLD_DEEPBIND) calls SSL_read.*past tlsmeter.s hooks.*bytes per read, read sizes and per-connection totals are missing' "$d/curl-nopatch.report"; then
        pass "blind-php curl-nopatch: verdict: $(grep -o 'records without reads: libcurl[^;]*' "$d/curl-nopatch.report" | head -c 200)"
    else
        fail "blind-php curl-nopatch: no reads-bypassed verdict naming libcurl: $(grep -A3 verdicts "$d/curl-nopatch.report" | head -c 400)"
    fi
fi

if run stream ""; then
    n=$(tls_notes "$d/stream.traced.err")
    if [ "$n" -eq 0 ]; then
        pass "blind-php stream: no notice (no record outside a traced read)"
    else
        fail "blind-php stream: $n notices: $(grep -m2 '^tlsmeter:' "$d/stream.traced.err" | head -c 300)"
    fi
    tls_check "blind-php stream trace: reads carry the body" "$TLSM_PY" - "${TRACES[0]}" "$SIZE" <<'EOF'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
size = int(sys.argv[2])
got = sum(e["got"] for e in ev if e["ev"] == "read" and e["got"] > 0)
app = [e for e in ev if e["ev"] == "rec" and e.get("dir", "in") == "in" and e.get("type") == 23]
assert got >= size, "reads returned %d bytes, body is %d" % (got, size)
outside = [r for r in app if r["read"] == 0]
assert not outside, "%d application-data records outside reads" % len(outside)
print("ok reads returned %d bytes, %d records all inside reads" % (got, len(app)))
EOF
    "$ANALYZE" "${TRACES[0]}" >"$d/stream.report" 2>&1
    if grep -q 'records without reads' "$d/stream.report"; then
        fail "blind-php stream: the report claims records without reads: $(grep 'records without' "$d/stream.report" | head -c 300)"
    else
        pass "blind-php stream: no records-without-reads verdict"
    fi
fi
