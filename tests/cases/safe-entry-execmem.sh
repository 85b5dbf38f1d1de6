#!/usr/bin/env bash
# safe-entry-execmem: an entry patch whose trampoline page cannot be made executable must be
# refused, never installed. tests/progs/noexecmem runs a program under a seccomp filter that
# fails mprotect with EPERM the way an execmem policy does (SELinux deny_execmem refuses to
# make anonymous memory executable): mode rx refuses PROT_EXEC without PROT_WRITE (so
# PROT_READ|PROT_EXEC for the trampoline page, and for the text page's restore after the
# store), mode all refuses every PROT_EXEC (PROT_READ|PROT_WRITE|PROT_EXEC for the store
# too). Clients: a -Bsymbolic OpenSSL copy (tests/vendor/build, layout "symbolic") and
# `node --jitless` (its OpenSSL in its executable), each downloading 1 MiB from openssl
# s_server, untraced and traced under the same filter. Output and exit code must be the
# same (node's output includes how many file mappings are writable and executable at the
# end: a text page whose restore to read-and-execute failed after a store would be one); stderr and the trace's warn events must say the copy's entry points were left alone
# because their code or trampoline cannot be made executable (or, in mode all, writable);
# the copy's lib event must not claim reach "entry".
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload safe-entry-execmem
NX=$TLSM_PROGS/noexecmem
# What the refusal notice says in each mode (a regular expression): mode rx can only fail
# at making a page executable; mode all may fail first at making the text writable.
WHY_RX='cannot be made executable'
WHY_ALL='cannot be made (executable|writable)'

if [ ! -x "$NX" ]; then
    fail "safe-entry-execmem: $NX not built (make testprogs)"
    exit 0
fi
# The filter itself: PROT_READ|PROT_EXEC refused in both modes, PROT_READ|PROT_WRITE|PROT_EXEC
# only in mode all.
probe='import ctypes, mmap, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
p = libc.mmap(None, 4096, 3, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
r = [libc.mprotect(ctypes.c_void_p(p), 4096, prot) for prot in (5, 7, 1)]
print(" ".join(str(x) for x in r))'
rx=$("$NX" "$TLSM_PY" -c "$probe" 2>&1)
all=$("$NX" -a "$TLSM_PY" -c "$probe" 2>&1)
if [ "$rx" != "-1 0 0" ] || [ "$all" != "-1 -1 0" ]; then
    skip "safe-entry-execmem: the seccomp filter does not work here (mprotect R-X, RWX, R:" \
        "rx mode '$rx', all mode '$all'; want '-1 0 0', '-1 -1 0')"
    exit 0
fi

V=$O/vendor
if ! out=$(VENDOR_ONLY=symbolic "$TLSM_TOP/tests/vendor/build" "$V" 2>&1); then
    if echo "$out" | grep -q 'libssl-dev'; then
        skip "safe-entry-execmem symbolic: $out"
        V=
    else
        fail "safe-entry-execmem: vendor fixture did not build: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
        exit 0
    fi
fi
node=
if under_qemu; then
    skip "safe-entry-execmem node: no $(target_arch) node under qemu"
elif ! command -v node >/dev/null; then
    skip "safe-entry-execmem node: node is not installed (scripts/install-deps --extra nodejs)"
elif ! nm -D "$(command -v node)" 2>/dev/null | grep -q ' T SSL_read$'; then
    skip "safe-entry-execmem node: this node links a shared libssl (no SSL_read of its own)"
else
    node=$(command -v node)
fi

SIZE=$((1024 * 1024 + 7))
tls_make_file big.bin "$SIZE"
sha=$(tls_sha "$TLS_WWW/big.bin")
cat >"$d/get.js" <<'JS'
const https = require('https'), fs = require('fs'), crypto = require('crypto');
const h = crypto.createHash('sha256');
let n = 0;
https.get({host: '127.0.0.1', port: +process.argv[2], path: '/big.bin', servername: 'localhost',
           ca: fs.readFileSync(process.argv[3])}, res => {
  res.on('data', d => { h.update(d); n += d.length; });
  res.on('end', () => {
    // Code pages of files left writable and executable (a failed restore after a store).
    const wx = fs.readFileSync('/proc/self/maps', 'utf8').split('\n').map(l => l.split(/\s+/))
      .filter(f => f.length > 5 && f[5].startsWith('/') && /^.wx/.test(f[1])).length;
    console.log('bytes=' + n + ' sha256=' + h.digest('hex') + ' wx_file_maps=' + wx);
  });
}).on('error', e => { console.error('request:', e.code || e.message); process.exit(4); });
JS
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "safe-entry-execmem: openssl s_server did not start"
    exit 0
fi

# run NAME MODE OBJ CMD...: CMD under the filter in MODE (rx or all), untraced and traced.
# OBJ: the path of the copy whose entry points are refused (its lib event and notice).
run() {
    local name=$1 mode=$2 obj=$3 p=$d/$1-$2 why flag=() want
    shift 3
    [ "$mode" = all ] && flag=(-a)
    want=$WHY_RX
    [ "$mode" = all ] && want=$WHY_ALL
    TLS_RUNAS=("$NX" "${flag[@]}")
    tls_run "$p.plain" "" "$@"
    tls_run "$p.traced" "$p.%p.jsonl" "$@"
    TLS_RUNAS=()
    if [ "$(cat "$p.plain.rc")" != 0 ] || ! grep -q "bytes=$SIZE sha256=$sha" "$p.plain.out"; then
        fail "safe-entry-execmem $name $mode: the untraced run failed under the filter" \
            "(exit $(cat "$p.plain.rc")): $(head -c 300 "$p.plain.err")"
        return
    fi
    if ! why=$(tls_same_run x "$p.plain" "$p.traced"); then
        fail "safe-entry-execmem $name $mode: $why"
        return
    fi
    tls_traces "$p.*.jsonl"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "safe-entry-execmem $name $mode: ${#TRACES[@]} traces, want 1"
        return
    fi
    if ! grep -qE "^tlsmeter: .*entry points left alone.* \\(.*$want" "$p.traced.err"; then
        fail "safe-entry-execmem $name $mode: no notice on stderr that the entry points were" \
            "left alone because they $want: $(grep '^tlsmeter:' "$p.traced.err" | head -c 400)"
        return
    fi
    tls_check "safe-entry-execmem $name $mode: output and exit code as untraced, entry patches refused" \
        "$TLSM_PY" - "${TRACES[0]}" "$obj" "$want" <<'PY'
import json, os, re, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
obj, want = sys.argv[2], sys.argv[3]
warn = [e["msg"] for e in ev if e["ev"] == "warn" and "entry points left alone" in e["msg"]]
assert any(re.search(want, m) for m in warn), "no warn event saying %r: %r" % (want, warn)
libs = [e for e in ev if e["ev"] == "lib" and os.path.realpath(e["path"]) == os.path.realpath(obj)]
assert libs, "no lib event for %s" % obj
for l in libs:
    assert "entry" not in l.get("reach", "").split("+"), "%s reach %r" % (obj, l.get("reach"))
PY
}

for mode in rx all; do
    [ -n "$V" ] && run symbolic "$mode" "$V/symbolic/libvendor.so" \
        "$V/symbolic/vclient" -p "$TLS_PORT" -c "$TLS_CERT" -f big.bin
    [ -n "$node" ] && run node "$mode" "$node" "$node" --jitless "$d/get.js" "$TLS_PORT" "$TLS_CERT"
done
