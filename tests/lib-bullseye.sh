# tests/lib-bullseye.sh: Debian 11 (glibc 2.31, OpenSSL 1.1.1w) programs with the dist
# library preloaded, for the bullseye-* and dist-* cases. Source after tests/lib.sh and
# tests/lib-tls.sh.
# shellcheck shell=bash
#
# The Debian 11 userland is scripts/bullseye-root's (build/bullseye-ARCH, cached) and the
# library `make dist-ARCH`'s (build/dist/ARCH/libtlsmeter.so, cached): a case sets them up
# with bz_setup, which skips the case (naming why) only when Debian 11's packages cannot be
# fetched. Its programs run through the root's own loader, never the host's:
#   amd64  ROOT/lib/x86_64-linux-gnu/ld-2.31.so --library-path ROOT/lib/...:ROOT/usr/lib/...
#          [--preload LIB] ROOT/usr/bin/PROG   (the host kernel, Debian 11's whole userland)
#   arm64  qemu-aarch64-static -L ROOT [-E LD_PRELOAD=LIB] ROOT/usr/bin/PROG
#
#   bz_setup CASE ARCH            BZ_ROOT, BZ_LIB (the dist library), BZ_ARCH (x86_64|aarch64)
#   bz_root CASE DEB              BZ_ROOT only (amd64|arm64), for the cases that run the root's
#                                 libraries on the host's glibc (openssl111-*)
#   bz_cmd [VAR=VAL...] PROG ARGS...   the command line, in the array BZ_CMD; LD_PRELOAD=LIB
#                                 among the VARs becomes the loader's --preload / qemu -E
#   bz_get PREFIX PORT FILE [VAR=VAL...]   GET FILE with the root's `openssl s_client`:
#                                 PREFIX.out (what SSL_read returned), .body, .got, .err, .rc
#   bz_traced TRACE               true when the trace's OpenSSL 1.1.1 instance is traced (its
#                                 `lib` event has no `left_alone`); else false, BZ_WHY says why

BZ_SKIP_111="OpenSSL 1.1.1 copy not traced by this build"

# bz_setup CASE ARCH: ARCH is x86_64 or aarch64. Exits the case (skip or fail) on failure.
bz_setup() {
    local name=$1 out top=${TLSM_BZ_TOP:-$TLSM_TOP/build}
    BZ_ARCH=$2
    case $BZ_ARCH in
    x86_64) BZ_DEB=amd64 BZ_TRIPLET=x86_64-linux-gnu ;;
    aarch64) BZ_DEB=arm64 BZ_TRIPLET=aarch64-linux-gnu ;;
    *)
        fail "$name: no Debian 11 root for $BZ_ARCH"
        exit 0
        ;;
    esac
    if [ "$BZ_ARCH" = aarch64 ] && ! command -v qemu-aarch64-static >/dev/null; then
        "$TLSM_TOP/scripts/install-deps" --extra "qemu-user-static" >/dev/null 2>&1
    fi
    bz_root "$name" "$BZ_DEB"
    # The dist library, built (or found up to date) by the Makefile; never under the
    # test run's make variables (jobserver, cross compiler of make check-aarch64).
    if ! out=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u CROSS_COMPILE -u SYSROOT \
        make -s -C "$TLSM_TOP" --no-print-directory O="$top" "dist-$BZ_ARCH" 2>&1); then
        fail "$name: make dist-$BZ_ARCH failed: $(echo "$out" | tail -n 4 | tr '\n' ' ')"
        exit 0
    fi
    BZ_LIB=$top/dist/$BZ_ARCH/libtlsmeter.so
    BZ_LD=$BZ_ROOT/lib/$BZ_TRIPLET/ld-2.31.so
    BZ_LIBPATH=$BZ_ROOT/lib/$BZ_TRIPLET:$BZ_ROOT/usr/lib/$BZ_TRIPLET
}

bz_root() {
    local name=$1 out top=${TLSM_BZ_TOP:-$TLSM_TOP/build}
    if ! out=$("$TLSM_TOP/scripts/bullseye-root" "$2" "$top/bullseye-$2" 2>&1); then
        if echo "$out" | grep -q 'cannot read\|download failed'; then
            skip "$name: Debian 11 packages cannot be fetched: $(echo "$out" | tail -n 2 | tr '\n' ' ')"
        else
            fail "$name: scripts/bullseye-root $2 failed: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
        fi
        exit 0
    fi
    BZ_ROOT=$(echo "$out" | tail -n 1)
}

bz_cmd() {
    local envs=() pre=
    while [[ $# -gt 0 && $1 == [A-Za-z_]*=* ]]; do
        case $1 in
        LD_PRELOAD=*) pre=${1#LD_PRELOAD=} ;;
        *) envs+=("$1") ;;
        esac
        shift
    done
    local prog=$1
    shift
    [[ $prog == */* ]] || prog=$BZ_ROOT/usr/bin/$prog
    if [ "$BZ_ARCH" = aarch64 ]; then
        BZ_CMD=(env -u LD_PRELOAD -u LD_LIBRARY_PATH "${envs[@]}" qemu-aarch64-static
            -L "$BZ_ROOT" ${pre:+-E "LD_PRELOAD=$pre"} "$prog" "$@")
    else
        BZ_CMD=(env -u LD_PRELOAD -u LD_LIBRARY_PATH "${envs[@]}" "$BZ_LD" --library-path
            "$BZ_LIBPATH" ${pre:+--preload "$pre"} "$prog" "$@")
    fi
}

# bz_get PREFIX PORT FILE [VAR=VAL...]: s_client -quiet reads until the server closes; its
# stdout is exactly what SSL_read returned (HTTP header + body), bounded by $TLS_RUN_TIMEOUT.
bz_get() {
    local p=$1 port=$2 file=$3
    shift 3
    rm -f "$p".*
    printf 'GET /%s HTTP/1.0\r\n\r\n' "$file" >"$p.req"
    bz_cmd "$@" openssl s_client -connect "127.0.0.1:$port" -quiet -CAfile "$TLS_CERT" \
        -verify_return_error -servername localhost
    timeout -k 5 "$TLS_RUN_TIMEOUT" "${BZ_CMD[@]}" <"$p.req" >"$p.out" 2>"$p.err"
    echo $? >"$p.rc"
    local a
    for a in "$@"; do # a traced run's format-2 traces as JSON Lines, for the cases' reads
        [[ $a == TLSMETER_OUT=* ]] && tlsm_jsonl "${a#TLSMETER_OUT=}"
    done
    tls_size "$p.out" >"$p.got"
    "$TLSM_PY" -c 'import sys
d = open(sys.argv[1], "rb").read()
i = d.find(b"\r\n\r\n")
open(sys.argv[2], "wb").write(d[i + 4:] if i >= 0 else b"")' "$p.out" "$p.body"
}

# bz_traced TRACE: the trace's own word on the 1.1.1 copy (a `lib` event whose version is
# OpenSSL 1.1.1...): traced when that event has no `left_alone` key.
bz_traced() {
    BZ_WHY=$("$TLSM_PY" -c 'import json, sys
libs = [json.loads(l) for l in open(sys.argv[1]) if "\"ev\":\"lib\"" in l]
old = [l for l in libs if str(l.get("version", "")).startswith("OpenSSL 1.1.1")]
if not old:
    sys.exit("no lib event with an OpenSSL 1.1.1 version")
left = [l for l in old if "left_alone" in l]
sys.exit("%s (lib %s: left_alone %s)" % (sys.argv[2], left[0]["id"], left[0]["left_alone"])
         if left else 0)' "$1" "$BZ_SKIP_111" 2>&1)
}

# bz_header TRACE KEY: the trace header's KEY ("" when absent).
bz_header() {
    "$TLSM_PY" -c 'import json, sys
h = json.loads(open(sys.argv[1]).readline())
print(h.get(sys.argv[2], ""))' "$1" "$2" 2>/dev/null
}

# bz_impl_check CHECK-NAME TRACE WANT-IMPL [VERDICT]: tlsmeter-analyze ($A) --json says
# WANT-IMPL (and lists VERDICT among its verdicts).
bz_impl_check() {
    local name=$1 trace=$2
    if ! "$A" --json "$trace" >"$trace.json" 2>"$trace.json.err"; then
        fail "$name: tlsmeter-analyze failed: $(head -c 200 "$trace.json.err")"
        return
    fi
    tls_check "$name" "$TLSM_PY" -c 'import json, sys
s = json.load(open(sys.argv[1]))
errs = []
if s.get("impl") != sys.argv[2]:
    errs.append("impl %r, want %s" % (s.get("impl"), sys.argv[2]))
ids = [v.get("id") for v in s.get("verdicts", [])]
if len(sys.argv) > 3 and sys.argv[3] not in ids:
    errs.append("verdicts %s, want %s among them" % (ids, sys.argv[3]))
sys.exit("; ".join(errs) if errs else 0)' "$trace.json" "${@:3}"
}
