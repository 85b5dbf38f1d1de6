#!/usr/bin/env bash
# safe-notices: tlsmeter's notices are whole or visibly cut, and a PIE with packed relative
# relocations gets none it does not deserve. (1) A 700-byte notice (an unknown TLSMETER_*
# variable with a long name) is printed whole on stderr and in the trace's warn event. (2) A
# notice longer than the bound (a name of 300 words) is cut after a whole word and ends in
# " [cut: N more bytes]" with N the bytes left out, the line within 1024 bytes, the same text
# in the trace; one word longer than the bound is cut with the marker too. (3) OpenSSL linked
# into a stripped PIE with -z pack-relative-relocs (tests/vendor/vexe.c: its relative
# relocations in DT_RELR) is reached like the same PIE without: no notice at all (none
# blaming the provider tables' shape, none calling it unseeable), lib reach "table+plt",
# records covering the body, socket reads carrying it, output unchanged.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload safe-notices
if under_qemu; then
    skip "safe-notices: host only (the PIE is linked with the host's toolchain)"
    exit 0
fi
tls_make_file small.bin 1000
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "safe-notices: openssl s_server did not start"
    exit 0
fi

# notice NAME VAR: a download by mtclient (the system libssl: a trace is written) with the
# variable VAR=1 set, which tlsmeter names in a notice; its stderr line and the trace's warn
# event (the first that names the variable) go to NAME.line and NAME.warn.
notice() {
    local p=$d/$1
    TLS_ENV=("$2=1")
    tls_run "$p" "$p.%p.jsonl" "$TLSM_PROGS/mtclient" -q -p "$TLS_PORT" -c "$TLS_CERT" -t 1 -n 1 \
        -o /dev/null /small.bin
    TLS_ENV=()
    grep -m1 '^tlsmeter: unknown variable' "$p.err" >"$p.line"
    tls_traces "$p.*.jsonl"
    : >"$p.warn"
    [ "${#TRACES[@]}" -eq 1 ] && "$TLSM_PY" -c 'import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["ev"] == "warn" and e["msg"].startswith("unknown variable"):
        print("tlsmeter: " + e["msg"])
        break' "${TRACES[0]}" >"$p.warn"
}

# (1) Whole.
var=TLSMETER_$(printf 'LONG_NAME_%03d_' $(seq 1 50))END
want="tlsmeter: unknown variable $var ignored (TLSMETER_HELP=1 lists the known ones)"
notice whole "$var"
if [ "$(cat "$d/whole.line")" != "$want" ]; then
    fail "safe-notices ${#want}-byte notice: stderr has $(wc -c <"$d/whole.line") bytes, not the whole notice: ...$(tail -c 80 "$d/whole.line")"
elif [ "$(cat "$d/whole.warn")" != "$want" ]; then
    fail "safe-notices ${#want}-byte notice: the trace's warn event is not the whole notice: ...$(tail -c 80 "$d/whole.warn")"
else
    pass "safe-notices ${#want}-byte notice whole on stderr and in the trace"
fi

# (2) Cut at a word boundary, marked: CUTCHECK LINE FULLTEXT [word]: the check.
CUTCHECK='
import re, sys
line, full = open(sys.argv[1]).read().rstrip("\n"), sys.argv[2]
m = re.fullmatch(r"(.*) \[cut: (\d+) more bytes\]", line, re.S)
assert m, "no cut marker at the end: ...%s" % line[-80:]
kept, more = m.group(1), int(m.group(2))
assert len(line) + 1 <= 1024, "line of %d bytes" % (len(line) + 1)
assert full.startswith(kept), "the kept text is not the notice'"'"'s start"
assert len(full) - len(kept) == more, "marker says %d more bytes, %d were left out" % (more, len(full) - len(kept))
if len(sys.argv) < 4:
    assert full[len(kept)] == " ", "cut inside a word: ...%s|%s..." % (kept[-20:], full[len(kept):len(kept) + 20])
    assert len(kept) > 900, "only %d bytes kept" % len(kept)
print("ok %d bytes kept, %d cut" % (len(kept), more))
'
var="TLSMETER_$(printf 'word%03d ' $(seq 1 300))END"
want="tlsmeter: unknown variable $var ignored (TLSMETER_HELP=1 lists the known ones)"
notice cut "$var"
check "safe-notices ${#want}-byte notice cut after a whole word, marked, on stderr" \
    "$TLSM_PY" -c "$CUTCHECK" "$d/cut.line" "$want"
check "safe-notices ${#want}-byte notice cut the same in the trace" cmp "$d/cut.line" "$d/cut.warn"
var="TLSMETER_$(printf 'W%.0s' $(seq 1 1500))"
want="tlsmeter: unknown variable $var ignored (TLSMETER_HELP=1 lists the known ones)"
notice word "$var"
check "safe-notices a 1500-byte word cut, marked" "$TLSM_PY" -c "$CUTCHECK" "$d/word.line" "$want" word

# (3) DT_RELR.
if ! out=$("$TLSM_TOP/tests/vendor/vexe-build" "$O/vexe" 2>&1); then
    if echo "$out" | grep -q 'static archives'; then
        skip "safe-notices DT_RELR: $out"
    else
        fail "safe-notices DT_RELR: vexe did not build: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
    fi
    exit 0
fi
if [ ! -x "$O/vexe/vexe-relr" ]; then
    skip "safe-notices DT_RELR: this linker has no -z pack-relative-relocs"
    exit 0
fi
if ! readelf -d "$O/vexe/vexe-relr" | grep -q '(RELR)'; then
    fail "safe-notices DT_RELR: vexe-relr has no DT_RELR (test is broken)"
    exit 0
fi
BODY=$((1024 * 1024 + 7))
tls_make_file big.bin "$BODY"
want_sha=$(tls_sha "$TLS_WWW/big.bin")
p=$d/relr
cmd=("$O/vexe/vexe-relr" -p "$TLS_PORT" -c "$TLS_CERT" -f big.bin)
tls_run "$p.plain" "" "${cmd[@]}"
tls_run "$p.traced" "$p.%p.jsonl" "${cmd[@]}"
tls_traces "$p.*.jsonl"
if ! why=$(tls_same_run x "$p.plain" "$p.traced"); then
    fail "safe-notices DT_RELR: $why"
elif ! grep -q "sha256=$want_sha" "$p.traced.out"; then
    fail "safe-notices DT_RELR: wrong body: $(head -c 200 "$p.traced.out")"
elif [ "$(tls_notes "$p.traced.err")" -ne 0 ]; then
    fail "safe-notices DT_RELR: $(tls_notes "$p.traced.err") notices: $(grep '^tlsmeter:' "$p.traced.err" | head -c 400)"
elif [ "${#TRACES[@]}" -ne 1 ]; then
    fail "safe-notices DT_RELR: ${#TRACES[@]} traces, want 1"
else
    tls_check "safe-notices DT_RELR PIE: no notice, reached through its tables and PLT" \
        "$TLSM_PY" - "${TRACES[0]}" "$BODY" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
body = int(sys.argv[2])
v = [e for e in ev if e["ev"] == "lib" and e["path"].endswith("/vexe-relr")]
assert len(v) == 1 and v[0].get("reach") == "table+plt", "lib events %r" % v
assert not [e for e in ev if e["ev"] in ("warn", "blind")], "warn/blind events: %r" % [
    e for e in ev if e["ev"] in ("warn", "blind")]
recs = [e for e in ev if e["ev"] == "rec" and e.get("dir", "in") == "in" and e["type"] == 23]
pt = sum(r["pt"] for r in recs if r["tag_ok"])
assert pt >= body, "records carry %d bytes of plaintext, the body is %d" % (pt, body)
wire = sum(e["got"] for e in ev if e["ev"] == "sockread" and e["got"] > 0)
assert wire >= body + 5 * len(recs), "socket reads returned %d bytes" % wire
print("ok %d records, %d bytes; %d socket bytes" % (len(recs), pt, wire))
PY
fi
