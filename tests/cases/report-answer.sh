#!/usr/bin/env bash
# report-answer: the text report answers first. For a real curl download (hardware AES, then
# held to software AES by the mask of scripts/tlsmeter-mask.sh, then TLSMETER_CRYPTO=hw) the
# first 8 lines of the default report name the program, the share of its CPU that TLS crypto
# took, the class of each copy with its share of the bytes, and the headline verdict with its
# gain (or why there is none), each equal to what --json says of the same trace; the whole
# report is at most 40 lines, and --verbose is longer (histograms, the mean column, the hooks
# that never fired). The demo's download is such a curl download.
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=scripts/tlsmeter-mask.sh
. "$TLSM_TOP/scripts/tlsmeter-mask.sh"
N=report-answer
d=$(case_dir)
tls_init "$d"
tls_need_preload "$N"
A=$O/tlsmeter-analyze
if [ ! -x "$A" ]; then
    fail "$N: $A not built; run make"
    exit 0
fi
BODY=$((4 * 1024 * 1024 + 5))
tls_make_file a.bin "$BODY"
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "$N: openssl s_server did not start"
    exit 0
fi

# answer TRACE WANT_CLASS: the first 8 lines against --json, the length limits.
answer() {
    "$A" "$1" >"$1.txt" 2>"$1.txt.err" || { echo "analyzer exit $?: $(head -c 200 "$1.txt.err")"; return 1; }
    "$A" --verbose "$1" >"$1.verbose" 2>/dev/null || { echo "--verbose failed"; return 1; }
    "$A" --json "$1" >"$1.json" 2>/dev/null || { echo "--json failed"; return 1; }
    PROG=$TLS_DL "$TLSM_PY" - "$1.txt" "$1.json" "$1.verbose" "$2" <<'PY'
import json, os, re, sys
txt = open(sys.argv[1]).read().splitlines()
rep = json.load(open(sys.argv[2]))
verbose = open(sys.argv[3]).read().splitlines()
want = sys.argv[4]
top = txt[:8]
errs = []
def line(tag):
    got = [l for l in top if l.startswith(tag)]
    if not got:
        errs.append("no %r line in the first 8: %r" % (tag, top))
        return ""
    return got[0]
prog = line("program ")
# The downloader: curl, or (where curl cannot run, as under the sanitizers) the test's own
# client; in a release's userland the program runs through that release's loader.
want_prog = "curl" if os.environ["PROG"] == "curl" else "mtclient"
if want_prog not in prog and not (os.environ.get("TLSM_USERLAND") and "ld-linux" in prog):
    errs.append("program line does not name %s: %r" % (want_prog, prog))
cpu = line("CPU ")
m = re.search(r"decryption (?:>= )?([0-9.<]+) %", cpu)
share = rep["crypto_share_cpu"]
if not m:
    errs.append("CPU line has no decryption share: %r" % cpu)
elif m.group(1).startswith("<"):
    if share >= 0.0001:
        errs.append("CPU line says <0.01 %%, --json %r" % share)
else:
    shown = float(m.group(1)) / 100
    if abs(shown - share) > max(0.006 * share, 0.0006):
        errs.append("CPU line %s %%, --json crypto_share_cpu %.4f" % (m.group(1), share))
if want == "rerouted":
    r = line("rerouted ")
    if "hw backend: hardware" not in r:
        errs.append("rerouted line: %r" % r)
else:
    copies = [c for c in rep["copies"] if c.get("bytes")]
    c = line("copy ")
    if len(copies) != 1:
        errs.append("%d copies with bytes in --json" % len(copies))
    else:
        j = copies[0]
        lib = j["path"].rsplit("/", 1)[-1]
        pct = "%.1f %%" % (100 * j["share_bytes"])
        if not c.startswith("copy         %s (" % lib) or ": %s for %s of the bytes" % (j["class"], pct) not in c:
            errs.append("copy line %r, --json %s class %s share %s" % (c, lib, j["class"], pct))
        if j["class"] != want:
            errs.append("class %s, want %s" % (j["class"], want))
v = line("verdict ")
head = rep["verdicts"][0]
if not v.startswith("verdict      [%s] " % head["id"]) or head["text"] not in v:
    errs.append("verdict line %r, --json first verdict %s" % (v[:120], head["id"]))
if want in ("table", "vector"):
    if head["id"] != "software-aes" or not ("gain" in v):
        errs.append("software: headline %s without its gain: %r" % (head["id"], v[:200]))
if want == "hardware" and head["id"] != "hardware-aes":
    errs.append("hardware: headline %s" % head["id"])
if len(txt) > 40:
    errs.append("report is %d lines, want <= 40" % len(txt))
if len(verbose) <= len(txt) or not any("hooks that never fired" in l for l in verbose) \
        or not any("|***" in l or "|*" in l for l in verbose):
    errs.append("--verbose (%d lines) adds no histogram or unfired hooks to the default (%d)" % (len(verbose), len(txt)))
if errs:
    sys.exit("; ".join(errs))
print("ok %d lines, headline %s" % (len(txt), head["id"]))
PY
}

# run TAG [VAR=VAL...]: one traced curl download, checked for its bytes.
run() {
    local tag=$1
    shift
    TLS_ENV=("$@")
    tls_client "$TLS_DL" "$TLS_PORT" a.bin "$d/$tag" "$d/$tag.%p.trace"
    TLS_ENV=()
    tls_traces "$d/$tag.*.trace"
    if [ "$(cat "$d/$tag.rc")" != 0 ] || [ "$(tls_size "$d/$tag.body")" != "$BODY" ]; then
        fail "$N $tag: download failed (exit $(cat "$d/$tag.rc")): $(head -c 200 "$d/$tag.err")"
        return 1
    fi
    [ "${#TRACES[@]}" -eq 1 ] || { fail "$N $tag: ${#TRACES[@]} traces, want 1"; return 1; }
}

if run hw; then
    check "$N hardware download: first 8 lines answer, <= 40 lines" answer "${TRACES[0]}" hardware
fi
if run soft "OPENSSL_ia32cap=$TLSM_IA32_SOFT_MASK"; then
    check "$N masked download: software class and the gain (or how to get it) on top" \
        answer "${TRACES[0]}" table
fi
if run calib "OPENSSL_ia32cap=$TLSM_IA32_SOFT_MASK" TLSMETER_CALIBRATE=1; then
    check "$N masked download with calibration: the headline carries the expected gain" \
        answer "${TRACES[0]}" table
    check "$N masked download with calibration: the gain is a figure" \
        grep -q '^verdict      \[software-aes\] .*expected gain ~[0-9.]*x' "${TRACES[0]}.txt"
fi
if run rerouted "OPENSSL_ia32cap=$TLSM_IA32_SOFT_MASK" TLSMETER_CRYPTO=hw; then
    check "$N rerouted download: the rerouted line on top" answer "${TRACES[0]}" rerouted
fi
tls_server_stop
