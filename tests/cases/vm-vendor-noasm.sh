#!/usr/bin/env bash
# vm-vendor-noasm: the seed case on a real arm64 kernel. The no-asm vendor SDK of vendor-noasm
# (Debian 12's OpenSSL source configured linux-generic64 no-asm, cross-built on the host into a
# hidden, stripped libfoundation.so: mk/arm64vm.mk builds it before the boot, into the build
# the VM gets) runs natively under Debian's arm64 kernel (make check-arm64vm), where perf
# samples the program's own CPU. Checked: output and exit code unchanged when traced; the
# SDK's records classed table, named as OpenSSL's C code, the headline verdict software-aes;
# the SDK's crypto share of the process's CPU (tlsmeter's on-CPU crypto time over the traced
# span's CPU) within 5 points of `perf record -e cpu-clock`'s share of the process's samples
# in libfoundation.so (the SDK is all but nothing besides its AES and GHASH in C);
# TLSMETER_CRYPTO=hw the same sha256 with every record on the hw backend. Skips, saying why,
# without the SDK (made on the host) or a working perf; qemu-user (no kernel of its own, no
# perf): vendor-noasm covers the structure there.
# tlsm-arch: aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
N=vm-vendor-noasm
d=$(case_dir)
tls_init "$d"
tls_need_preload "$N"
if under_qemu; then
    skip "$N: qemu-user has no arm64 kernel of its own and no perf (make check-arm64vm)"
    exit 0
fi
V=${TLSM_NOASM_SDK:-$O/vendor-noasm}
if [ ! -x "$V/otaget" ] || [ ! -f "$V/libfoundation.so" ]; then
    skip "$N: no no-asm SDK in $V (mk/arm64vm.mk builds it on the host before the boot)"
    exit 0
fi
if ! command -v perf >/dev/null || ! perf record -q -e cpu-clock -o "$d/probe.data" true \
    >"$d/probe.err" 2>&1; then
    skip "$N: perf record -e cpu-clock does not work here: $(head -c 200 "$d/probe.err")"
    exit 0
fi
A=$O/tlsmeter-analyze
IMG=$((${TLSM_NOASM_MIB:-8} * 1024 * 1024 + 333))
tls_make_file manifest.json $((64 * 1024))
tls_make_file image.bin "$IMG"
want_sha=$(tls_sha "$TLS_WWW/image.bin")
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "$N: openssl s_server did not start"
    exit 0
fi
TLS_RUN_TIMEOUT=600
cmd=("$V/otaget" -p "$TLS_PORT" -c "$TLS_CERT" -m manifest.json -f image.bin)
tls_run "$d/plain" "" "${cmd[@]}"
if [ "$(cat "$d/plain.rc")" != 0 ] || ! grep -q "image bytes=$IMG sha256=$want_sha" "$d/plain.out"; then
    fail "$N: untraced run failed (exit $(cat "$d/plain.rc")): $(head -c 300 "$d/plain.err")"
    exit 0
fi

# traced NAME: one traced run, under perf record for the native one; TRACES[0] its trace.
traced() {
    local p=$d/$1
    TLS_RUNAS=()
    [ "$1" = native ] && TLS_RUNAS=(perf record -q -e cpu-clock -o "$p.perf" --)
    tls_run "$p" "$p.%p.trace" "${cmd[@]}"
    TLS_RUNAS=()
    tls_traces "$p.*.trace"
    if ! why=$(tls_same_run x "$d/plain" "$p"); then
        fail "$N $1: $why"
        return 1
    fi
    if ! grep -q "image bytes=$IMG sha256=$want_sha" "$p.out"; then
        fail "$N $1: image sha256 changed: $(grep image "$p.out")"
        return 1
    fi
    [ "${#TRACES[@]}" -eq 1 ] || {
        fail "$N $1: ${#TRACES[@]} traces, want 1"
        return 1
    }
}

if traced native; then
    p=$d/native
    "$A" "${TRACES[0]}" >"$p.report" 2>&1
    "$A" --json "${TRACES[0]}" >"$p.json" 2>>"$p.report.err"
    # perf's view: the process's samples by object (otaget and the threads it has).
    perf report -i "$p.perf" --stdio --sort dso -q 2>"$p.perf.err" >"$p.dso"
    if out=$("$TLSM_PY" - "$p.report" "$p.json" "$p.dso" "${TRACES[0]}" <<'PY' 2>&1
import json, sys
text, js, dso_txt, trace = open(sys.argv[1]).read(), json.load(open(sys.argv[2])), open(sys.argv[3]).read(), sys.argv[4]
assert "AES: C table (AES_encrypt) in software; GHASH: C 4-bit table in software" in text, "no C AES/GHASH detail in the report"
head = js["verdicts"][0]
assert head["id"] == "software-aes", "headline verdict %s: %s" % (head["id"], head.get("text"))
ev = [json.loads(l) for l in open(trace)]
hdr = ev[0]
sdk = {e["id"] for e in ev if e["ev"] == "lib" and e.get("path", "").endswith("/libfoundation.so")}
assert sdk, "no lib event for libfoundation.so"
crypto = sum(b["crypto_ns"] for b in js["buckets"] if b["lib"] in sdk)
cpu = sum(t["cpu_ns"] for t in js["traces"])
ours = 100.0 * crypto / cpu
tot = sdk_pct = 0.0
for line in dso_txt.splitlines():
    v = line.split()
    if len(v) >= 2 and v[0].endswith("%"):
        pct = float(v[0][:-1])
        tot += pct
        if v[-1].endswith("libfoundation.so"):
            sdk_pct += pct
assert tot > 50, "perf report has no samples: %r" % dso_txt[:300]
theirs = 100.0 * sdk_pct / tot
msg = "cputime %s: tlsmeter %.1f %% of the process's CPU in the SDK's crypto (%.1f of %.1f ms), perf %.1f %% of its cpu-clock samples in libfoundation.so" % (
    hdr.get("cputime"), ours, crypto / 1e6, cpu / 1e6, theirs)
assert abs(ours - theirs) <= 5, "more than 5 points apart: " + msg
print(msg)
PY
    ); then
        pass "$N native: output unchanged; table class, C AES and GHASH, software-aes first; $out"
    else
        fail "$N native: $(echo "$out" | tail -n 2 | tr '\n' ' ')"
    fi
fi

TLS_ENV=(TLSMETER_CRYPTO=hw)
if traced hw; then
    if out=$("$TLSM_PY" -c 'import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
recs = [e for e in ev if e["ev"] == "rec" and e.get("dir", "in") == "in" and e.get("type") == 23]
bad = [r.get("path") for r in recs if r.get("path") != "hw"]
assert recs and not bad, "%d of %d records not on the hw backend" % (len(bad), len(recs))
print("%d records, all path hw" % len(recs))' "${TRACES[0]}" 2>&1); then
        pass "$N hw: same sha256; $out"
    else
        fail "$N hw: $(echo "$out" | tail -n 1)"
    fi
fi
TLS_ENV=()
tls_server_stop
