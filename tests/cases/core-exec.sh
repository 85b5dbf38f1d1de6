#!/usr/bin/env bash
# core-exec: a program that downloads and then exec()s another one (no exit, no destructors)
# still leaves a complete trace: buffered lines written, an end line naming the exec. A failed
# exec goes on tracing; the end line written at exit then supersedes the exec one.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload core-exec

tls_make_file f.bin $((200 * 1024 + 7))
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "core-exec: openssl s_server did not start"
    exit 0
fi

# ok: exec /bin/echo. The trace's last line is an end naming it, after every rec and read.
tls_run "$d/ok.plain" "" "$TLSM_PROGS/execclient" "$TLS_PORT" "$TLS_CERT" /f.bin /bin/echo replaced
tls_run "$d/ok" "$d/ok.%p.jsonl" "$TLSM_PROGS/execclient" "$TLS_PORT" "$TLS_CERT" /f.bin \
    /bin/echo replaced
if [ "$(cat "$d/ok.rc")" != 0 ] || ! cmp -s "$d/ok.out" "$d/ok.plain.out"; then
    fail "core-exec ok: output or exit code differs with the preload: $(head -c 200 "$d/ok.err")"
else
    check "core-exec ok: records, then an end naming the exec" "$TLSM_PY" - "$d"/ok.*.jsonl <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
recs = [e for e in ev if e["ev"] == "rec" and e.get("dir", "in") == "in" and e["type"] == 23]
assert recs, "no application-data records"
assert ev[-1]["ev"] == "end", "last line is %s" % ev[-1]["ev"]
assert ev[-1].get("exec") == "/bin/echo", ev[-1].get("exec")
assert sum(e["pt"] for e in recs) == sum(e["got"] for e in ev if e["ev"] == "read" and e["got"] > 0)
PY
fi

# The report says why the trace stops (the analyzer of the build under test).
if run_target "$O/tlsmeter-analyze" "$d"/ok.*.jsonl 2>/dev/null | grep -q "replaced itself with exec of /bin/echo"; then
    pass "core-exec report: names the exec"
else
    fail "core-exec report: no 'replaced itself with exec of /bin/echo' line"
fi

# failed exec: the program goes on and exits 3; the last end line has no exec key.
tls_run "$d/bad" "$d/bad.%p.jsonl" "$TLSM_PROGS/execclient" "$TLS_PORT" "$TLS_CERT" /f.bin \
    /nonexistent/program
if [ "$(cat "$d/bad.rc")" != 3 ]; then
    fail "core-exec failed exec: exit $(cat "$d/bad.rc"), want 3"
else
    check "core-exec failed exec: two end lines, the last one from exit" "$TLSM_PY" - \
        "$d"/bad.*.jsonl <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
ends = [e for e in ev if e["ev"] == "end"]
assert len(ends) == 2, len(ends)
assert ends[0].get("exec") == "/nonexistent/program" and "exec" not in ends[1]
assert ev[-1] is ends[1]
PY
fi
tls_server_stop
