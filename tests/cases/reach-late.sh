#!/usr/bin/env bash
# reach-late: a vendor SDK with its own OpenSSL loaded after start by dlopen (by path and by
# bare name, RTLD_LOCAL and GLOBAL, NOW and LAZY, DEEPBIND, from inside another library's
# constructor, from two threads at once, loaded and unloaded in rounds) is reached before that
# dlopen returns, as at start: its records through its provider tables (hidden and stripped
# copies), its reads through its entry points (-Bsymbolic). Output and exit code as untraced;
# the copy's records carry every body byte; its lib line says late and how it was reached.
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload reach-late
V=$O/vendor
if ! out=$("$TLSM_TOP/tests/vendor/build" "$V" 2>&1); then
    skip "reach-late: vendor fixtures did not build: $(echo "$out" | tail -n 2 | tr '\n' ' ')"
    exit 0
fi
PROG=$TLSM_PROGS/latedl
CTOR=$O/tests/plugins/latector.so
BODY=$((2 * 1024 * 1024 + 333))
tls_make_file big.bin "$BODY"
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "reach-late: openssl s_server did not start"
    exit 0
fi

# one NAME LAYOUT HOW ROUNDS THREADS WANT: WANT is how the lib reach must begin ("table" for
# hidden and stripped copies, "table+entry" for -Bsymbolic ones). latedl downloads in threads
# of its own, so entry points are patched as with threads running (one instruction, or refused).
one() {
    local name=$1 lay=$2 how=$3 rounds=$4 threads=$5 want=$6 p=$d/$1
    local lib=$V/$lay/libvendor.so
    if [ "$how" = deepbind ] && [[ ${TLSM_SAN:-} == *address* ]]; then
        skip "reach-late $name: ASan's dlopen refuses RTLD_DEEPBIND (google/sanitizers#611)"
        return
    fi
    TLS_RUNAS=(env LD_LIBRARY_PATH="$V/$lay" LATEDL_CTOR="$CTOR" LATEDL_VENDOR="$lib")
    local cmd=("$PROG" "$how" "$lib" "$TLS_PORT" "$TLS_CERT" big.bin "$rounds" "$threads")
    tls_run "$p.plain" "" "${cmd[@]}"
    tls_run "$p" "$p.%p.trace" "${cmd[@]}"
    TLS_RUNAS=()
    if [ "$(cat "$p.plain.rc")" != 0 ]; then
        fail "reach-late $name: untraced run failed (exit $(cat "$p.plain.rc")): $(head -c 300 "$p.plain.err")"
        return
    fi
    if [ "$(cat "$p.rc")" != "$(cat "$p.plain.rc")" ] || ! cmp -s "$p.out" "$p.plain.out"; then
        fail "reach-late $name: output or exit code differ traced (exit $(cat "$p.rc")): $(head -c 300 "$p.err")"
        return
    fi
    tlsm_jsonl "$p.%p.trace"
    tls_traces "$p.*.trace"
    tls_check "reach-late $name: every body byte in the SDK's records, lib late with reach $want" \
        "$TLSM_PY" - "${TRACES[0]}" "$lib" "$((rounds * threads))" "$BODY" "$want" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
lib, n, body, want = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
libs = {e["id"]: e for e in ev if e["ev"] == "lib" and e["path"] == lib}
assert libs, "no lib line for %s" % lib
for l in libs.values():
    assert l.get("late") is True, "lib line without late: %s" % l
    assert l.get("reach", "").startswith(want), "reach %s, want %s" % (l.get("reach"), want)
recs = [e for e in ev if e["ev"] == "rec" and e.get("lib") in libs and e.get("dir", "in") == "in"
        and e["type"] == 23]
pt = sum(e["pt"] for e in recs)
assert n * body <= pt < n * (body + 4096), "records carry %d bytes for %d bodies of %d" % (pt, n, body)
assert len(recs) >= n * body // 16384, "%d records for %d bodies" % (len(recs), n)
blind = [e for e in ev if e["ev"] == "blind" and e.get("path") == lib]
assert not blind, "blind: %s" % blind
# The bytes received: through its SSL_read (patched entry) or its socket reads (plt), the
# latter whenever SSL_read's first instruction cannot be replaced alone while threads run.
reads = sum(e["got"] for e in ev if e["ev"] == "read" and e["got"] > 0)
socks = sum(e["got"] for e in ev if e["ev"] == "sockread" and e.get("lib") in libs)
assert reads == pt or socks >= pt, "reads carry %d bytes, socket reads %d, records %d" % (
    reads, socks, pt)
print(len(recs), "records,", pt, "bytes,", len(libs), "lib lines")
PY
}

one stripall-local stripall now-local 2 1 table
one stripall-lazy-global stripall lazy-global 1 1 table
one hidden-deepbind hidden deepbind 2 1 table
one stripall-name stripall name 1 1 table
one stripall-ctor stripall ctor 2 1 table
one stripall-threads stripall now-local 3 2 table
one symbolic-local symbolic now-local 2 1 table+entry
one symbolic-threads symbolic deepbind 3 2 table+entry
tls_server_stop
