#!/usr/bin/env bash
# vendor-noasm: the vendor mistake tlsmeter exists for, built for real: Debian 12's own OpenSSL
# source configured `no-asm` (scripts/openssl-noasm, cached outside the clone), linked into a
# hidden, stripped vendor SDK libfoundation.so (tests/vendor/noasm-build), beside the system
# OpenSSL 3 in a downloader that also links libcurl (otaget: a 1 MiB manifest over libcurl,
# then the image through the SDK). Checked, native: output and exit code unchanged; the SDK's
# copy reached through its provider tables with >= 1 record per 16 KiB of the image; its impl
# event names AES and GHASH as OpenSSL's C code (c-table, c-4bit: no GHASH pointer in the GCM
# context, a table block) while the system copy's names hardware; the report gives the
# copy's records the table class with "C table" in its detail and the no-asm verdict.
# TLSMETER_CRYPTO=hw: the same sha256 and every SDK record on the hw backend. No timing: the
# CPU figures are in docs/performance.md. Skips, saying why, when the source cannot be fetched.
# Under qemu (make check-aarch64) the OpenSSL source is cross-built `linux-generic64 no-asm`
# and the fixtures over the arm64 sysroot, which has no libcurl: the manifest goes through the
# system libssl.so.3 there (libsysget.so), and the image is 16 MiB (TLSM_NOASM_MIB).
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
N=vendor-noasm
tls_need_preload "$N"
vcc=${CC:-gcc}
if under_qemu; then
    export SYSROOT=$TLSM_SYSROOT
    vcc="${CROSS_COMPILE:-aarch64-linux-gnu-}gcc"
fi
if noasm=$("$TLSM_TOP/scripts/openssl-noasm" bookworm "$(target_arch)" 2>"$d/noasm.err"); then
    :
else
    rc=$?
    if [ "$rc" = 3 ]; then
        skip "$N: no no-asm OpenSSL build: $(tail -n 1 "$d/noasm.err")"
    else
        fail "$N: scripts/openssl-noasm failed (exit $rc): $(tail -n 3 "$d/noasm.err" | tr '\n' ' ')"
    fi
    exit 0
fi
V=$O/vendor-noasm
if ! out=$(CC=$vcc VENDOR_SYSROOT=${TLSM_SYSROOT:-} "$TLSM_TOP/tests/vendor/noasm-build" "$V" "$noasm" 2>&1); then
    fail "$N: fixtures did not build: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
    exit 0
fi
A=$O/tlsmeter-analyze
mib=64
if under_qemu; then
    target_wrapper "$A" "$d/analyze"
    A=$d/analyze
    mib=16
fi
IMG=$((${TLSM_NOASM_MIB:-$mib} * 1024 * 1024 + 333))
tls_make_file manifest.json $((1024 * 1024))
tls_make_file image.bin "$IMG"
want_sha=$(tls_sha "$TLS_WWW/image.bin")
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "$N: openssl s_server did not start"
    exit 0
fi
cmd=("$V/otaget" -p "$TLS_PORT" -c "$TLS_CERT" -m manifest.json -f image.bin)
TLS_RUN_TIMEOUT=120

tls_run "$d/plain" "" "${cmd[@]}"
if [ "$(cat "$d/plain.rc")" != 0 ] || ! grep -q "image bytes=$IMG sha256=$want_sha" "$d/plain.out"; then
    fail "$N: untraced run failed (exit $(cat "$d/plain.rc")): $(head -c 300 "$d/plain.err")"
    exit 0
fi

# records TRACE MODE: the structural checks of one traced run (MODE native or hw).
records() {
    "$TLSM_PY" -c 'import json, math, sys
trace, mode, img, run = sys.argv[1], sys.argv[2], int(sys.argv[4]), sys.argv[3]
ev = [json.loads(l) for l in open(trace)]
libs = {e["id"]: e for e in ev if e["ev"] == "lib"}
impls = {e["id"]: e for e in ev if e["ev"] == "impl"}
recs = [e for e in ev if e["ev"] == "rec" and e.get("dir", "in") == "in" and e.get("type") == 23]
sdk = [i for i, l in libs.items() if l.get("path", "").endswith("/libfoundation.so")]
assert sdk, "no lib event for libfoundation.so: %s" % [l.get("path") for l in libs.values()]
assert "table" in libs[sdk[0]].get("reach", ""), "SDK copy not reached through its tables: %s" % libs[sdk[0]]
assert libs[sdk[0]].get("late", False) == run.startswith("late"), "lib late %s in run %s" % (libs[sdk[0]].get("late"), run)
# A rerouted record names the backend instance (rec.lib), not the copy: the SDK copy is the
# one whose records belong to no traced connection (its SSL_read is internal: conn 0).
vr = [r for r in recs if (r.get("lib") == sdk[0] if mode == "native" else r.get("conn") == 0)]
need = math.ceil(img / 16384)
assert len(vr) >= need, "%d SDK records, want >= %d (1 per 16 KiB)" % (len(vr), need)
assert sum(r["pt"] for r in vr) >= img, "SDK records carry %d plaintext bytes < %d" % (sum(r["pt"] for r in vr), img)
sysr = [r for r in recs if r not in vr]
assert sysr, "no records of the system copy (the libcurl manifest)"
if mode == "hw":
    bad = [r.get("path") for r in recs if r.get("path") != "hw"]
    assert not bad, "%d of %d records not on the hw backend: %s" % (len(bad), len(recs), sorted(set(bad)))
    print("ok hw: %d SDK records (and the %d of the system copy), all path hw" % (len(vr), len(sysr)))
    sys.exit(0)
ids = {r.get("impl") for r in vr}
assert len(ids) == 1 and None not in ids and 0 not in ids, "SDK records name impl ids %s" % ids
im = impls[ids.pop()]
assert (im["aes"], im["ghash"]) == ("c-table", "c-4bit"), "SDK impl %s/%s, want c-table/c-4bit: %s" % (im["aes"], im["ghash"], im)
assert "fn_ghash_off" not in im and "fn_gmult_off" not in im and "fn_stream_off" not in im, im
assert im.get("fn_block_module", "").endswith("/libfoundation.so"), im
sids = {r.get("impl") for r in sysr if r.get("impl")}
shw = [impls[i]["aes"] for i in sids]
assert "c-table" not in shw, "a system-copy record names the C code: %s" % shw
print("ok native: %d SDK records, impl %d %s/%s (block at %s in %s); system copy %d records, aes %s"
      % (len(vr), im["id"], im["aes"], im["ghash"], im.get("fn_block_off"), im["fn_block_module"].split("/")[-1], len(sysr), shw))
' "$1" "$2" "$3" "$IMG"
}

# The SDK linked at start, then the same SDK loaded by dlopen after start (otaget-plugin -l:
# after libcurl's manifest), each natively and rerouted to the hw backend.
late=("$V/otaget-plugin" -l "$V/libfoundation.so" -p "$TLS_PORT" -c "$TLS_CERT" -m manifest.json -f image.bin)
for mode in native hw late-native late-hw; do
    TLS_ENV=()
    [ "${mode#late-}" = hw ] && TLS_ENV=(TLSMETER_CRYPTO=hw)
    # The late native run calibrates: the headline verdict then gives the expected gain.
    [ "$mode" = late-native ] && TLS_ENV=(TLSMETER_CALIBRATE=1)
    p=$d/$mode
    if [ "${mode#late-}" != "$mode" ]; then
        tls_run "$p" "$p.%p.trace" "${late[@]}"
    else
        tls_run "$p" "$p.%p.trace" "${cmd[@]}"
    fi
    if ! why=$(tls_same_run x "$d/plain" "$p"); then
        fail "$N $mode: $why"
        continue
    fi
    if ! grep -q "image bytes=$IMG sha256=$want_sha" "$p.out"; then
        fail "$N $mode: image sha256 changed: $(grep image "$p.out")"
        continue
    fi
    tls_traces "$p.*.trace"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "$N $mode: ${#TRACES[@]} traces, want 1"
        continue
    fi
    if ! out=$(records "${TRACES[0]}" "${mode#late-}" "$mode" 2>&1); then
        fail "$N $mode: $(echo "$out" | tail -n 2 | tr '\n' ' ')"
        continue
    fi
    if [ "${mode#late-}" = hw ]; then
        pass "$N $mode: same sha256; $out"
        continue
    fi
    # The report: the SDK's records in the table class, named as C code, and the verdict.
    "$A" "${TRACES[0]}" >"$p.report" 2>"$p.report.err"
    "$A" --json "${TRACES[0]}" >"$p.json" 2>>"$p.report.err"
    if ! why=$("$TLSM_PY" -c 'import json, sys
text, js = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
assert "AES: C table (AES_encrypt) in software; GHASH: C 4-bit table in software" in text, "no C AES/GHASH detail in the report"
assert "AES and GHASH in C: this OpenSSL was built without its assembler modules" in text, "no no-asm verdict line in the report"
def walk(o):
    if isinstance(o, dict):
        yield o
        for v in o.values():
            yield from walk(v)
    elif isinstance(o, list):
        for v in o:
            yield from walk(v)
vs = [o for o in walk(js) if o.get("id") == "no-asm" and "text" in o]
assert vs and "libfoundation.so" in vs[0]["text"], "--json has no no-asm verdict naming libfoundation.so"
head = js["verdicts"][0]
assert head["id"] == "software-aes", "headline verdict %s: %s" % (head["id"], head.get("text"))
assert sys.argv[3] != "late-native" or "expected gain" in head["text"], "no gain: %s" % head["text"]
rows = [o for o in walk(js) if "C table (AES_encrypt)" in str(o.get("impl_detail", ""))]
assert rows and all(r.get("impl") == "table" for r in rows), "--json: the C rows are not class table: %s" % [(r.get("impl"), r.get("impl_detail")) for r in rows]
' "$p.report" "$p.json" "$mode" 2>&1); then
        fail "$N $mode report: $(echo "$why" | tail -n 2 | tr '\n' ' ')"
        continue
    fi
    pass "$N $mode: output unchanged; $out; report: table class, C AES and GHASH, software-aes first, no-asm verdict"
done
# The seed's own build: a target of the vendor's own, "platform: Linux" in its build text (the
# same-length edit of the string in a copy of the archive's cversion object). The report must
# say what that means.
pl=$d/platform-linux
rm -rf "$pl" && mkdir -p "$pl/noasm/lib" && cp -r "$noasm/include" "$pl/noasm/" &&
    cp "$noasm/lib/libssl.a" "$pl/noasm/lib/" && cp "$noasm/lib/libcrypto.a" "$pl/noasm/lib/" &&
    (cd "$pl" && ${CROSS_COMPILE:-}ar x noasm/lib/libcrypto.a libcrypto-lib-cversion.o) &&
    "$TLSM_PY" - "$pl/libcrypto-lib-cversion.o" <<'PY' && ${CROSS_COMPILE:-}ar r "$pl/noasm/lib/libcrypto.a" "$pl/libcrypto-lib-cversion.o"
import re, sys
p = sys.argv[1]
b = open(p, "rb").read()
old = re.findall(rb"platform: [^\0]+\0", b)
assert len(old) == 1, "%d platform strings" % len(old)
open(p, "wb").write(b.replace(old[0], b"platform: Linux".ljust(len(old[0]), b"\0")))
PY
if [ $? != 0 ] || ! out=$(CC=$vcc VENDOR_SYSROOT=${TLSM_SYSROOT:-} "$TLSM_TOP/tests/vendor/noasm-build" "$pl/sdk" "$pl/noasm" 2>&1); then
    fail "$N platform Linux: the edited SDK did not build: $(echo "${out:-}" | tail -n 2 | tr '\n' ' ')"
else
    p=$d/linux
    TLS_ENV=()
    tls_run "$p" "$p.%p.trace" "$pl/sdk/otaget-plugin" -l "$pl/sdk/libfoundation.so" -p "$TLS_PORT" \
        -c "$TLS_CERT" -m manifest.json -f image.bin
    tls_traces "$p.*.trace"
    if [ "$(cat "$p.rc")" != 0 ] || [ "${#TRACES[@]}" -ne 1 ]; then
        fail "$N platform Linux: the traced run failed (exit $(cat "$p.rc")): $(head -c 300 "$p.err")"
    elif "$A" "${TRACES[0]}" 2>/dev/null | grep '\[no-asm\]' | grep -q 'names the platform "Linux", which is not one of OpenSSL.s Configure targets'; then
        pass "$N platform Linux: the no-asm verdict says the build names no Configure target"
    else
        fail "$N platform Linux: the no-asm verdict does not explain platform Linux: $("$A" "${TRACES[0]}" 2>/dev/null | grep '\[no-asm\]' | head -c 300)"
    fi
fi
tls_server_stop
