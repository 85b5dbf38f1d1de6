#!/usr/bin/env bash
# mask-software: the software mask of scripts/tlsmeter-mask.sh holds every OpenSSL a program
# may bring to software AES, and tlsmeter ab says so, or says plainly when a mask did not.
# For the program's OpenSSL (the host's 3.0; Debian 13's 3.5 in the [trixie] run) and Debian
# 11's 1.1.1, under the mask:
#   - a traced download: the analyzer's class is table or vector (never hardware or unknown);
#     the copy's capability words have AES-NI, PCLMULQDQ, VAES and VPCLMULQDQ off and AVX2 /
#     AVX-512F as the CPU has them (the mask takes AES away, not the vector units);
#   - `openssl speed -evp aes-128-gcm` at 16 KiB is in the software band (>= 1.5 ns/B: a wide
#     band, hardware AES-GCM does well under 1 ns/B; software is 6-13 here);
# and tlsmeter ab --mask shows "mask held (software)" yes. On 3.5 with a CPU that has VAES,
# VPCLMULQDQ and AVX-512, a mask hiding AES-NI alone leaves the VAES GCM kernel on: tlsmeter ab
# must warn that the native run is not software (the check can fail, and says so).
# tlsm-userland: trixie forky
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=tests/lib-bullseye.sh
. "$TLSM_TOP/tests/lib-bullseye.sh"
# shellcheck source=scripts/tlsmeter-mask.sh
. "$TLSM_TOP/scripts/tlsmeter-mask.sh"
N=mask-software
d=$(case_dir)
tls_init "$d"
tls_need_preload "$N"
A=$O/tlsmeter-analyze
if [ ! -x "$A" ]; then
    fail "$N: $A not built; run make"
    exit 0
fi
MASK="OPENSSL_ia32cap=$TLSM_IA32_SOFT_MASK"
# The soft backend (TLSMETER_CRYPTO=soft) loads its copy under the preload's own copy of the
# mask: the two must be the same, or soft would be hardware on 3.5 while labelled table.
for h in x86_64:"$TLSM_IA32_SOFT_MASK" aarch64:"$TLSM_ARM_SOFT_MASK"; do
    got=$(sed -n 's/^#define TLSM_ARCH_SOFT_MASK "OPENSSL_[a-z0-9]*cap=\(.*\)"$/\1/p' \
        "$TLSM_TOP/preload/arch/${h%%:*}/counter.h")
    if [ "$got" = "${h#*:}" ]; then
        pass "$N ${h%%:*}: the soft backend's mask is scripts/tlsmeter-mask.sh's"
    else
        fail "$N ${h%%:*}: preload/arch/${h%%:*}/counter.h masks '$got', scripts/tlsmeter-mask.sh '${h#*:}'"
    fi
done
# The program's OpenSSL in this run, for the names of the checks.
OSSL="OpenSSL 3.0 (host)"
in_userland && OSSL="OpenSSL $(ul_openssl | sed 's/^OpenSSL //; s/\.$//') ($TLSM_USERLAND)"

# cpu_has FLAG...: every FLAG is in /proc/cpuinfo's flags.
cpu_has() {
    local f flags
    flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
    for f in "$@"; do [[ $flags == *" $f "* ]] || return 1; done
}

# software TRACE: the analyzer's class is table or vector, and the traced copy's capability
# words have the AES and carry-less-multiply bits off, AVX2/AVX-512F as the CPU has them.
software() {
    "$A" --json "$1" >"$1.json" 2>"$1.json.err" ||
        { echo "tlsmeter-analyze failed: $(head -c 200 "$1.json.err")"; return 1; }
    "$TLSM_PY" -c 'import json, sys
s = json.load(open(sys.argv[1]))
errs = []
if s.get("impl") not in ("table", "vector"):
    errs.append("class %r, want table or vector: %r" % (s.get("impl"),
                [c.get("impl_detail") for c in s.get("ciphers", [])]))
libs = [e for e in map(json.loads, open(sys.argv[2])) if e.get("ev") == "lib"
        and e.get("has_crypto") and e.get("caps") and e.get("role") != "backend"]
if not libs:
    errs.append("no lib event with capability words")
for e in libs:
    c = e["caps"]
    on = [k for k in ("aesni", "pclmulqdq", "vaes", "vpclmulqdq") if c.get(k)]
    off = [k for k in sys.argv[3].split() if not c.get(k)]
    if on or off:
        errs.append("lib %s caps: %s still on, %s lost" % (e["id"], on, off))
sys.exit("; ".join(errs) if errs else 0)' "$1.json" "$1" "$KEEP"
}
KEEP=''
cpu_has avx2 && KEEP="avx2"
cpu_has avx512f && KEEP="$KEEP avx512f"

# band NAME CMD...: CMD is `openssl speed -mr` of one AES-128-GCM 16 KiB point; its ns/B must
# be in the software band.
band() {
    local name=$1 bps
    shift
    bps=$(timeout -k 5 60 "$@" 2>/dev/null </dev/null | awk -F: '/^\+F:/ { print $4; exit }')
    check "$name: openssl speed under the mask is software ($(awk -v b="${bps:-0}" \
        'BEGIN { printf (b > 0 ? "%.2f ns/B" : "no figure"), 1e9 / (b > 0 ? b : 1) }') >= 1.5)" \
        awk -v b="${bps:-0}" 'BEGIN { exit !(b > 0 && 1e9 / b >= 1.5) }'
}
SPEED=(speed -evp aes-128-gcm -bytes 16384 -seconds 1 -mr)

BODY=$((2 * 1024 * 1024 + 77))
tls_make_file m.bin "$BODY"
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "$N: openssl s_server did not start"
    exit 0
fi

# 1. The program's own OpenSSL (3.0 on the host, 3.5 in the trixie run).
TLS_ENV=("$MASK")
tls_client "$TLS_DL" "$TLS_PORT" m.bin "$d/masked" "$d/masked.%p.jsonl"
TLS_ENV=()
tls_traces "$d/masked.*.jsonl"
if [ "$(cat "$d/masked.rc")" != 0 ] || [ "$(tls_size "$d/masked.body")" != "$BODY" ]; then
    fail "$N $OSSL: masked $TLS_DL download failed (exit $(cat "$d/masked.rc")): $(head -c 200 "$d/masked.err")"
elif [ "${#TRACES[@]}" -ne 1 ]; then
    fail "$N $OSSL: ${#TRACES[@]} traces of the masked download, want 1"
else
    check "$N $OSSL: a masked download is table/vector, AES bits off, AVX kept" software "${TRACES[0]}"
fi
target_cmd "$MASK" openssl "${SPEED[@]}"
band "$N $OSSL" "${TARGET_CMD[@]}"

# 2. tlsmeter ab: --mask holds; on 3.5, a mask hiding AES-NI alone is called out. COMMAND is
# curl (the userland's through its own loader; tlsmeter record's LD_PRELOAD reaches it).
AB_CMD=(curl)
in_userland && AB_CMD=("$TLSM_UL_LD" --library-path "$TLSM_UL_LIBPATH" "$TLSM_UL_ROOT/usr/bin/curl")
AB_CMD+=(-sS --cacert "$TLS_CERT" -o "$d/ab.body" "https://127.0.0.1:$TLS_PORT/m.bin")
# ab TAG [VAR=VAL...] -- AB-OPTIONS...: one native-only tlsmeter ab run, output in $d/TAG.*.
ab() {
    local tag=$1 envs=()
    shift
    while [ "$1" != -- ]; do
        envs+=("$1")
        shift
    done
    shift
    env -u OPENSSL_ia32cap "${envs[@]}" "$TLSM_TOP/scripts/tlsmeter-ab" "$@" -o "$d/$tag" \
        --modes native --lib "$TLSM_PRELOAD" --analyzer "$A" -- "${AB_CMD[@]}" \
        >"$d/$tag.out" 2>"$d/$tag.err"
}
# held TAG yes|NO: the "mask held (software)" row says so, and the warning is there for NO only.
held() {
    grep -qE "^mask held \(software\) +$2( |\$)" "$d/$1.out" ||
        { echo "row: $(grep '^mask held' "$d/$1.out")"; return 1; }
    if [ "$2" = yes ]; then
        ! grep -q 'NOT software AES' "$d/$1.err" || { echo "warned: $(cat "$d/$1.err")"; return 1; }
    else
        grep -q 'WARNING: the native run is NOT software AES' "$d/$1.err" ||
            { echo "no warning: $(head -c 300 "$d/$1.err")"; return 1; }
    fi
}
if tls_curl_ok; then
    ab ab-mask -- --mask
    check "$N $OSSL: tlsmeter ab --mask: mask held (software) yes, no warning" held ab-mask yes
    if in_userland && cpu_has vaes vpclmulqdq avx512f avx512dq avx512bw avx512vl; then
        ab ab-aesni OPENSSL_ia32cap="~0x200000000000000:~0x0:~0x0:~0x0:~0x0" --
        check "$N $OSSL: tlsmeter ab, AES-NI alone hidden: NO and a warning (VAES kernel on)" \
            held ab-aesni NO
    fi
else
    skip "$N $OSSL tlsmeter ab: $TLS_CURL_SKIP"
fi

# 3. Debian 11's OpenSSL 1.1.1, once (the host run): its s_client traced with the dist library.
if ! in_userland; then
    bz_setup "$N" x86_64
    bz_get "$d/bz" "$TLS_PORT" m.bin LD_PRELOAD="$BZ_LIB" "$MASK" TLSMETER_OUT="$d/bz.%p.jsonl"
    tls_traces "$d/bz.*.jsonl"
    if [ "$(cat "$d/bz.rc")" != 0 ] || [ "$(tls_size "$d/bz.body")" != "$BODY" ]; then
        fail "$N OpenSSL 1.1.1 (bullseye): masked s_client failed (exit $(cat "$d/bz.rc")): $(head -c 200 "$d/bz.err")"
    elif [ "${#TRACES[@]}" -ne 1 ]; then
        fail "$N OpenSSL 1.1.1 (bullseye): ${#TRACES[@]} traces, want 1"
    elif ! bz_traced "${TRACES[0]}"; then
        skip "$N OpenSSL 1.1.1 (bullseye) class: $BZ_WHY"
    else
        check "$N OpenSSL 1.1.1 (bullseye): a masked download is table/vector, AES bits off, AVX kept" \
            software "${TRACES[0]}"
    fi
    bz_cmd "$MASK" openssl "${SPEED[@]}"
    band "$N OpenSSL 1.1.1 (bullseye)" "${BZ_CMD[@]}"
fi
tls_server_stop
