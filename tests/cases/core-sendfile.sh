#!/usr/bin/env bash
# core-sendfile: SSL_sendfile is hooked and changes nothing for the program. A client
# (tests/progs/sendfileget.c) sends its GET with SSL_sendfile, which OpenSSL refuses without
# kernel TLS send (as here: no tls module, or not asked for), then with SSL_write, as a server
# falls back. With and without tlsmeter the program sees the same SSL_sendfile return value,
# errno (a sentinel SSL_sendfile leaves alone), SSL_get_error and error reason, and the same
# download. The trace has the failed call as a write event (fn SSL_sendfile, asked the
# request's size, written -1, err as the program saw it, no record), no ktls entry (no bytes
# went out through it), the SSL_write that sent the request, and the connection's total written
# bytes the request's. Its success over kTLS (bytes, the ktls entry): tests/cases/vm-ktls.sh.
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload core-sendfile

tls_make_file f.bin $((200 * 1024 + 7))
printf 'GET /f.bin HTTP/1.0\r\nHost: localhost\r\n\r\n' >"$d/req"
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "core-sendfile: openssl s_server did not start"
    exit 0
fi
p=$d/sf
tls_run "$p.plain" "" "$TLSM_PROGS/sendfileget" "$TLS_PORT" "$TLS_CERT" "$d/req"
tls_run "$p.traced" "$p.%p.jsonl" "$TLSM_PROGS/sendfileget" "$TLS_PORT" "$TLS_CERT" "$d/req"
tls_server_stop
if [ "$(cat "$p.plain.rc")" != 0 ]; then
    fail "core-sendfile: the client failed without tlsmeter: $(head -c 300 "$p.plain.err")"
    exit 0
fi
if why=$(tls_same_run x "$p.plain" "$p.traced"); then
    pass "core-sendfile: SSL_sendfile's return value, errno, SSL_get_error and reason, and the download, as without tlsmeter: $(tr '\n' ' ' <"$p.traced.out")"
else
    fail "core-sendfile: $why"
fi
tls_traces "$p.*.jsonl"
if [ "${#TRACES[@]}" -ne 1 ]; then
    fail "core-sendfile: ${#TRACES[@]} traces, want 1"
    exit 0
fi
run_target "$O/tlsmeter-analyze" --json "${TRACES[0]}" >"$p.json" 2>"$p.json.err"
check "core-sendfile trace: the failed SSL_sendfile is a write event as the program saw it, no ktls entry, the request's bytes written once; the analyzer reads it" \
    "$TLSM_PY" - "${TRACES[0]}" "$p.traced.out" "$(tls_size "$d/req")" "$p.json" <<'PY'
import json, re, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
out = open(sys.argv[2]).read()
req = int(sys.argv[3])
ret, ssl_error = (int(v) for v in re.search(r"sendfile ret=(-?\d+) errno=\d+ ssl_error=(\d+)", out).groups())
assert ret == -1, out  # no kTLS send here: OpenSSL refuses
writes = [e for e in ev if e["ev"] == "write"]
sf = [w for w in writes if w["fn"] == "SSL_sendfile"]
assert len(sf) == 1, writes
w = sf[0]
assert (w["asked"], w["written"], w.get("err"), w["recs"]) == (req, ret, ssl_error, 0), w
assert not [e for e in ev if e["ev"] == "blind" and e.get("what") == "ktls"], "a ktls entry"
sw = [w for w in writes if w["fn"] == "SSL_write"]
assert len(sw) == 1 and sw[0]["written"] == req and sw[0]["recs"] >= 1, sw
closes = [e for e in ev if e["ev"] == "conn" and e["phase"] == "close"]
assert len(closes) == 1 and closes[0]["writes"] == 2 and closes[0]["wbytes"] == req, closes
end = [e for e in ev if e["ev"] == "end"][0]
assert end["hooks"]["SSL_sendfile"] == 1 and "SSL_sendfile" not in end["unfired"], end["hooks"]
j = json.load(open(sys.argv[4]))
assert j["encrypt"]["bytes_written"] == req, j["encrypt"]["bytes_written"]
PY
