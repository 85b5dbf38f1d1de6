#!/usr/bin/env bash
# vendor-openssl111: A real OpenSSL 1.1.1 copy beside the system OpenSSL 3 in one
# process: the vendor library of tests/vendor (vendor.c) built over Debian 11's 1.1.1w
# libssl.a + libcrypto.a (scripts/bullseye-root), in the layouts where a 1.1.1 copy can live
# beside libssl.so.3 at all: versioned (every export at a version of its own), plugin
# (dlopen RTLD_LOCAL) and hidden (only vendor_* exported). Unversioned global exports
# (layouts first, sysfirst, symbolic of vendor-layouts) would bind the system libssl.so.3's
# versioned references to 1.1.1's functions (glibc accepts an unversioned definition), which
# no real program survives. vclient -s downloads 16 MiB through each copy. Checked: output
# unchanged; the system copy's connection fully traced and attributed to libcrypto.so.3;
# the 1.1.1 copy named by its own lib event (versioned, plugin) or a blind event (hidden:
# no_exports). Once the 1.1.1 copy is traced (its lib event without left_alone), its
# connection's records must belong to it and the report must name both instances with
# their versions; until then that part skips, saying so. Under qemu (make check-aarch64) the
# fixtures are cross-built over Debian 11's arm64 archives and run in the arm64 sysroot.
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=tests/lib-bullseye.sh
. "$TLSM_TOP/tests/lib-bullseye.sh"
d=$(case_dir)
tls_init "$d"
N=vendor-openssl111
tls_need_preload "$N"
bz_setup "$N" "$(target_arch)"
V=$O/vendor111
vcc=${CC:-gcc}
# The cross compiler searches the sysroot's multiarch folders by itself, after -I.
under_qemu && vcc="${CROSS_COMPILE:-aarch64-linux-gnu-}gcc --sysroot=$TLSM_SYSROOT"
if ! out=$(CC=$vcc VENDOR_LIBDIR=$BZ_ROOT/usr/lib/$BZ_TRIPLET VENDOR_ONLY="versioned hidden plugin" \
    VENDOR_SSL_CFLAGS="-I$BZ_ROOT/usr/include -I$BZ_ROOT/usr/include/$BZ_TRIPLET" \
    "$TLSM_TOP/tests/vendor/build" "$V" 2>&1); then
    fail "$N: fixtures over 1.1.1w did not build: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
    exit 0
fi
A=$O/tlsmeter-analyze
if under_qemu; then
    target_wrapper "$A" "$d/analyze"
    A=$d/analyze
fi
BODY=$((16 * 1024 * 1024))
tls_make_file big.bin "$BODY"
want_sha=$(tls_sha "$TLS_WWW/big.bin")
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "$N: openssl s_server did not start"
    exit 0
fi

# instances TRACE LAYOUT VENDOR-PATH: the structural checks, today's and (once the 1.1.1 copy
# is traced) the 1.1.1 copy's records. Prints "skip: why" when only the latter is missing.
instances() {
    "$TLSM_PY" -c 'import json, math, sys
trace, layout, vendor = sys.argv[1:4]
body = int(sys.argv[4])
ev = [json.loads(l) for l in open(trace)]
libs = {e["id"]: e for e in ev if e["ev"] == "lib"}
recs = [e for e in ev if e["ev"] == "rec" and e.get("dir", "in") == "in" and e.get("type") == 23]
reads = [e for e in ev if e["ev"] == "read"]
conns = {e["conn"]: e for e in ev if e["ev"] == "conn" and e.get("phase") == "open"}
sys3 = [i for i, l in libs.items() if l["path"].endswith("/libcrypto.so.3")]
assert sys3, "no lib event for the system libcrypto.so.3: %s" % [l["path"] for l in libs.values()]
assert str(libs[sys3[0]]["version"]).startswith("OpenSSL 3"), libs[sys3[0]]
srecs = [r for r in recs if r.get("lib") == sys3[0]]
need = math.ceil(body / 16384)
assert len(srecs) >= need, "%d records of the system copy, want >= %d" % (len(srecs), need)
assert sum(r["pt"] for r in srecs) >= body, "system copy plaintext %d < body %d" % (sum(r["pt"] for r in srecs), body)
old = [l for l in libs.values() if str(l.get("version", "")).startswith("OpenSSL 1.1.1")]
if layout == "hidden":
    bl = [e for e in ev if e["ev"] == "blind" and e.get("path", "").endswith(vendor)]
    assert bl and "no_exports" in bl[0]["reasons"], "no blind event naming %s with no_exports: %s" % (vendor, bl)
    assert not old, "a lib event for the hidden 1.1.1 copy: %s" % old
    print("ok system copy lib %d (%s): %d records; hidden 1.1.1 copy named blind %s"
          % (sys3[0], libs[sys3[0]]["version"], len(srecs), bl[0]["reasons"]))
    sys.exit(0)
assert old and old[0]["path"].endswith(vendor), "no lib event of the 1.1.1 copy %s: %s" % (vendor, [(l["path"], l.get("version")) for l in libs.values()])
o = old[0]
assert o["id"] not in sys3, "one instance id for both copies"
if "left_alone" in o:
    print("ok system copy lib %d (%s): %d records; 1.1.1 copy lib %d (%s) left alone"
          % (sys3[0], libs[sys3[0]]["version"], len(srecs), o["id"], o["version"]))
    print("skip: %s (lib %d: left_alone %s)" % (sys.argv[5], o["id"], o["left_alone"]))
    sys.exit(0)
orecs = [r for r in recs if r.get("lib") == o["id"]]
assert len(orecs) >= need, "%d records of the 1.1.1 copy, want >= %d" % (len(orecs), need)
assert {r["conn"] for r in orecs}.isdisjoint({r["conn"] for r in srecs}), "a connection with records of both copies"
got = sum(r["got"] for r in reads if isinstance(r.get("got"), int) and r["got"] > 0)
pt = sum(r["pt"] for r in recs)
assert pt == got, "records carry %d plaintext bytes, reads returned %d" % (pt, got)
print("ok system copy lib %d (%s): %d records; 1.1.1 copy lib %d (%s): %d records"
      % (sys3[0], libs[sys3[0]]["version"], len(srecs), o["id"], o["version"], len(orecs)))
' "$1" "$2" "$3" "$BODY" "$BZ_SKIP_111"
}

for l in "versioned||versioned/libvendor.so" "plugin|-l $V/first/libvendor.so|first/libvendor.so" \
    "hidden||hidden/libvendor.so"; do
    IFS='|' read -r layout args vendor <<<"$l"
    p=$d/$layout
    # shellcheck disable=SC2206 # args are words
    cmd=("$V/$layout/vclient" -p "$TLS_PORT" -c "$TLS_CERT" -f big.bin $args -s)
    tls_run "$p.plain" "" "${cmd[@]}"
    if [ "$(cat "$p.plain.rc")" != 0 ] || [ "$(grep -c "sha256=$want_sha" "$p.plain.out")" != 2 ]; then
        fail "$N $layout: untraced run failed (exit $(cat "$p.plain.rc")): $(head -c 300 "$p.plain.err")"
        continue
    fi
    tls_run "$p.traced" "$p.%p.jsonl" "${cmd[@]}"
    if ! why=$(tls_same_run x "$p.plain" "$p.traced"); then
        fail "$N $layout: $why"
        continue
    fi
    tls_traces "$p.*.jsonl"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "$N $layout: ${#TRACES[@]} traces, want 1"
        continue
    fi
    if ! out=$(instances "${TRACES[0]}" "$layout" "$vendor" 2>&1); then
        fail "$N $layout: $(echo "$out" | tail -n 2 | tr '\n' ' ')"
        continue
    fi
    pass "$N $layout: both downloads unchanged (sha256 ${want_sha:0:12}); $(echo "$out" | grep '^ok' | sed 's/^ok //')"
    if echo "$out" | grep -q '^skip: '; then
        skip "$N $layout 1.1.1 records and report: $(echo "$out" | sed -n 's/^skip: //p')"
        continue
    fi
    [ "$layout" = hidden ] && continue
    "$A" "${TRACES[0]}" >"$p.report" 2>&1
    if grep -q '^  lib [0-9]* .*(OpenSSL 1\.1\.1' "$p.report" && grep -q '^  lib [0-9]* .*(OpenSSL 3\.' "$p.report"; then
        pass "$N $layout report: both instances by id and version: $(grep '^  lib [0-9]' "$p.report" | tr -s ' ' | tr '\n' ';')"
    else
        fail "$N $layout report: want a lib line per copy (1.1.1 and 3.x): $(grep '^  lib ' "$p.report" | head -c 300)"
    fi
done
