#!/usr/bin/env bash
# aarch64-trace: the cross-built libtlsmeter.so traces the arm64 `openssl s_client` under qemu
# (TLS 1.3 AES-128-GCM, 2 MiB) and the path classification comes out right without trusting
# time (under qemu the table path runs *faster* than aese/pmull):
#   default caps                      app lib caps +aes +pmull, bulk bytes bypass CRYPTO_gcm128_*
#                                     (stitched kernel), analyzer class hardware
#   OPENSSL_armcap=0                  caps -aes -pmull, bytes through CRYPTO_gcm128_decrypt,
#                                     class table
#   OPENSSL_armcap=0 TLSMETER_CRYPTO=hw   records move to the backend (path hw, caps +aes +pmull)
#   TLSMETER_CRYPTO=soft              records move to an OPENSSL_armcap=0 backend (path soft)
# Every download keeps its sha256; the analyzer is the cross-built one, run under qemu too.
# tlsm-arch: aarch64
. "$TLSM_TOP/tests/lib.sh"
. "$TLSM_TOP/tests/lib-a64tls.sh"
unset OPENSSL_armcap

name=aarch64-trace
if [ ! -f "$TLSM_PRELOAD" ] || [ ! -x "$O/tlsmeter-analyze" ]; then
    fail "$name: cross build incomplete ($TLSM_PRELOAD, $O/tlsmeter-analyze)"
    exit 0
fi
d=$(case_dir)
a64_init "$d" || { fail "$name: no certificate"; exit 0; }
head -c 2097152 /dev/urandom >"$d/www/data"
want=$(a64_sha "$d/www/data")

# facts TRACE: what the trace says, as "key value" lines. The app's libcrypto is the lib with
# role app and has_crypto; the backend (reroute) has role backend. Bytes are plaintext bytes
# of application-data records; gcm_dec/gcm_ctr are the shares through CRYPTO_gcm128_decrypt
# and _decrypt_ctr32; measured is the app copy's lib measured_at (provider: its GCM calls are
# bound past, its records name the code read from its GCM context instead: aes, the impl
# events' AES code of the native records).
facts() {
    python3 - "$1" <<'EOF'
import json, sys
libs, recs, hdr, impls = {}, [], {}, {}
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e["ev"] == "header":
        hdr = e
    elif e["ev"] == "lib":
        libs[e["id"]] = e
    elif e["ev"] == "impl":
        impls[e["id"]] = e
    elif e["ev"] == "rec" and e.get("dir", "in") == "in" and e.get("dir", "in") == "in" and e.get("type") == 23:
        recs.append(e)
def caps(role):
    c = [l.get("caps", {}) for l in libs.values() if l.get("role") == role and l.get("has_crypto")]
    return ("+" if c and c[0].get("aes") and c[0].get("pmull") else "-") + "aes+pmull" if c else "none"
pt = sum(r.get("pt", 0) for r in recs) or 1
dec = sum(r.get("gcm_bytes", 0) for r in recs if r.get("gcm_fn") in ("decrypt", "both"))
ctr = sum(r.get("gcm_bytes", 0) for r in recs if r.get("gcm_fn") == "ctr32")
print("arch", hdr.get("arch"))
print("clock", hdr.get("clock"))
print("app", caps("app"))
print("backend", caps("backend"))
print("recs", len(recs))
print("paths", ",".join(sorted({r.get("path", "?") for r in recs})))
print("gcm_dec", round(100 * dec / pt))
print("gcm_ctr", round(100 * ctr / pt))
app = [l for l in libs.values() if l.get("role") == "app" and l.get("has_crypto")]
print("measured", app[0].get("measured_at", "evp") if app else "none")
print("aes", ",".join(sorted({impls[r["impl"]]["aes"] if r.get("impl") in impls else "none"
                              for r in recs if r.get("path") == "native"})) or "none")
EOF
}

# expect FACTS KEY VALUE [KEY VALUE...]: each fact must read its VALUE.
expect() {
    local f=$1 got
    shift
    while [ $# -ge 2 ]; do
        got=$(sed -n "s/^$1 //p" <<<"$f")
        [ "$got" = "$2" ] || { echo "$1 is '$got', want '$2'"; return 1; }
        shift 2
    done
}

# run LABEL [VAR=VAL...]: one traced download; checks the common facts, sets F (the facts)
# and J (the analyzer's JSON summary).
run() {
    local label=$1 p=$d/$1 traces
    shift
    F='' J=''
    a64_get "$p" data traced "$@"
    if [ "$(cat "$p.rc")" != 0 ] || [ "$(a64_sha "$p.body")" != "$want" ]; then
        fail "$name $label: download broken (exit $(cat "$p.rc"), $(stat -c %s "$p.body") bytes): $(grep -v '^depth\|^verify' "$p.err" | head -n 3 | tr '\n' ' ')"
        return 1
    fi
    pass "$name $label: sha256 of the download"
    traces=("$p".*.jsonl)
    if [ ${#traces[@]} != 1 ] || [ ! -s "${traces[0]}" ]; then
        fail "$name $label: want one trace, got: ${traces[*]}"
        return 1
    fi
    F=$(facts "${traces[0]}")
    check "$name $label: header arch aarch64, clock cntvct" expect "$F" arch aarch64 clock cntvct
    # At least the 128 16 KiB records of 2 MiB.
    check "$name $label: records traced ($(sed -n 's/^recs //p' <<<"$F"))" \
        test "$(sed -n 's/^recs //p' <<<"$F")" -ge 128
    J=$(run_target "$O/tlsmeter-analyze" --json "${traces[0]}" 2>"$p.analyze.err")
}

# analyzer_impl: the summary's implementation class of the single cipher row.
analyzer_impl() {
    python3 -c 'import json, sys
s = json.loads(sys.stdin.read())
print(",".join(sorted({c["impl"] for c in s.get("ciphers", [])})), s.get("traces", [{}])[0].get("emulated"))' <<<"$J"
}

a64_server 1.3 TLS_AES_128_GCM_SHA256 || { fail "$name: server did not start"; exit 0; }

if run default; then
    check "$name default: app caps +aes+pmull" expect "$F" app +aes+pmull
    check "$name default: path native" expect "$F" paths native
    if [ "$(sed -n 's/^measured //p' <<<"$F")" = provider ]; then
        check "$name default: measured at the provider, every record names ARMv8 AES" \
            expect "$F" aes armv8
    else
        check "$name default: bulk bytes bypass CRYPTO_gcm128_* (stitched kernel)" \
            test "$(sed -n 's/^gcm_dec //p' <<<"$F")" -le 5 -a "$(sed -n 's/^gcm_ctr //p' <<<"$F")" -le 5
    fi
    check "$name default: analyzer says hardware (emulated run)" test "$(analyzer_impl)" = "hardware True"
fi

if run armcap0 OPENSSL_armcap=0; then
    check "$name armcap0: app caps -aes+pmull" expect "$F" app -aes+pmull
    check "$name armcap0: path native" expect "$F" paths native
    if [ "$(sed -n 's/^measured //p' <<<"$F")" = provider ]; then
        check "$name armcap0: measured at the provider, every record names table AES" \
            expect "$F" aes table
    else
        check "$name armcap0: >= 95 % of bytes through CRYPTO_gcm128_decrypt" \
            test "$(sed -n 's/^gcm_dec //p' <<<"$F")" -ge 95
    fi
    check "$name armcap0: analyzer says table" test "$(analyzer_impl)" = "table True"
fi

if run armcap0-hw OPENSSL_armcap=0 TLSMETER_CRYPTO=hw; then
    check "$name armcap0-hw: app caps still -aes+pmull" expect "$F" app -aes+pmull
    check "$name armcap0-hw: backend caps +aes+pmull" expect "$F" backend +aes+pmull
    check "$name armcap0-hw: records on the hw backend" expect "$F" paths hw
    check "$name armcap0-hw: analyzer says hardware" test "$(analyzer_impl)" = "hardware True"
fi

if run soft TLSMETER_CRYPTO=soft; then
    check "$name soft: app caps +aes+pmull" expect "$F" app +aes+pmull
    check "$name soft: backend loaded with OPENSSL_armcap=0 (-aes+pmull)" expect "$F" backend -aes+pmull
    check "$name soft: records on the soft backend" expect "$F" paths soft
    check "$name soft: analyzer says table" test "$(analyzer_impl)" = "table True"
fi

a64_server_stop
grep -q "^FAIL $name" "$TLSM_RESULTS" || rm -rf "$d"
