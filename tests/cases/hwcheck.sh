#!/usr/bin/env bash
# hwcheck: scripts/tlsmeter-hwcheck tells hardware from software AES by what a file contains.
# The system libcrypto (x86_64) and Debian's arm64 libcrypto are `hardware`; our table-AES
# fixture (tests/fixtures/softaes) built for both is `software-only`, fails --require-hw,
# warns about `platform: Linux`, and a rebuild of it is "rebuilt but still software-only";
# libz is `no-aes`; bad input gets distinct exit codes; --pid reads a live process; and a
# board's busybox shell and tools (no GNU grep -P, busybox awk) give the same JSON.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"

d=$(case_dir)
HW=$TLSM_TOP/scripts/tlsmeter-hwcheck
FIX=$TLSM_TOP/tests/fixtures/softaes/softaes.c
cache=$O/cache/hwcheck
sleeper=""
trap '[ -n "$sleeper" ] && kill "$sleeper" 2>/dev/null' EXIT

"$TLSM_TOP/scripts/install-deps" --extra "binutils-aarch64-linux-gnu gcc-aarch64-linux-gnu shellcheck busybox" \
    >"$d/deps.log" 2>&1 || echo "install-deps failed, see $d/deps.log (parts will skip)"

# j FILE SUFFIX EXPR: evaluate a Python expression over the JSON document d in FILE, with l the
# "libraries" entry whose path ends with SUFFIX (None when SUFFIX is empty or matches none).
j() {
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
l = next((x for x in d.get("libraries", []) if sys.argv[2] and x["path"].endswith(sys.argv[2])), None)
print(eval(sys.argv[3]))' "$@"
}
# run NAME ARGS...: run the script, keep stdout/stderr/exit code as $d/NAME.{out,err,rc}.
run() {
    local name=$1
    shift
    "$HW" "$@" >"$d/$name.out" 2>"$d/$name.err"
    echo $? >"$d/$name.rc"
}
rc_of() { cat "$d/$1.rc"; }

# --- shellcheck on the scripts of this feature and their tests ---------------------------------
if command -v shellcheck >/dev/null; then
    check "hwcheck shellcheck: tlsmeter-hwcheck, tlsmeter-speed and their test cases are clean" \
        bash -c "cd '$TLSM_TOP' && shellcheck -x scripts/tlsmeter-hwcheck scripts/tlsmeter-speed \
            tests/cases/hwcheck.sh tests/cases/speed.sh"
else
    skip "hwcheck shellcheck: shellcheck not installed and could not be installed"
fi

# --- x86_64: the system libcrypto --------------------------------------------------------------
sys=$(ldconfig -p | awk '/libcrypto\.so\.3 .*x86-64/ { print $NF; exit }')
[ -n "$sys" ] || sys=/usr/lib/x86_64-linux-gnu/libcrypto.so.3
run sys --json --require-hw "$sys"
check "hwcheck x86_64 libcrypto: verdict hardware, --require-hw exits 0" \
    test "$(j "$d/sys.out" "$(basename "$sys")" "l['verdict']")/$(rc_of sys)" = hardware/0
aesni=$(j "$d/sys.out" "$(basename "$sys")" "l['insns'].get('aesenc', 0) + l['insns'].get('vaesenc', 0)")
pclmul=$(j "$d/sys.out" "$(basename "$sys")" "l['insns'].get('pclmulqdq', 0) + l['insns'].get('vpclmulqdq', 0)")
naive=$(objdump -d "$sys" | grep -cw pclmulqdq)
check "hwcheck x86_64 libcrypto: aesenc $aesni > 0, pclmul*dq $pclmul > 0" \
    test "$aesni" -gt 0 -a "$pclmul" -gt 0
check "hwcheck x86_64 libcrypto: naive 'grep -cw pclmulqdq' finds $naive, we count $pclmul (all spellings)" \
    test "$naive" -eq 0 -a "$pclmul" -gt 0
check "hwcheck x86_64 libcrypto: OpenSSL build strings read (platform debian-amd64 or linux-x86_64)" \
    test "$(j "$d/sys.out" "$(basename "$sys")" "l['platform'] in ('debian-amd64', 'linux-x86_64') and l['embeds_openssl'] and not l['warnings']")" = True
run systext "$sys"
has_rows() {
    local re
    for re in "^  verdict  *hardware" "^  hw AES  *[1-9].*aesenc" "^  hw GHASH  *[1-9].*pclmulqdq" \
        "^  platform " "^  \.text  *[1-9]" "^  md5  *[0-9a-f]{32}" "^  build id  *[0-9a-f]"; do
        grep -qE "$re" "$1" || { echo "no line matching '$re' in $1"; return 1; }
    done
}
check "hwcheck x86_64 libcrypto: text report has verdict, counts, platform, .text, md5, build id" \
    has_rows "$d/systext.out"

# --- CPU: this machine, and a board's /proc/cpuinfo (Cortex-A78AE with the crypto extensions) --
run cpu --cpu --json
want=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -xE 'aes|pclmulqdq|vaes|vpclmulqdq' | sort | tr '\n' ' ')
check "hwcheck --cpu: this machine's AES/GHASH flags as /proc/cpuinfo lists them (${want% })" \
    test "$(j "$d/cpu.out" "" "' '.join(sorted(d['cpu']['features'])) + ' '")" = "$want"
printf 'processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics\nCPU implementer\t: 0x41\nCPU architecture: 8\n' >"$d/cpuinfo.a78"
printf 'processor\t: 0\nFeatures\t: fp asimd evtstrm crc32 cpuid\nCPU implementer\t: 0x41\nCPU architecture: 8\n' >"$d/cpuinfo.nocrypto"
HWCHECK_CPUINFO=$d/cpuinfo.a78 "$HW" --cpu --json >"$d/cpu-a78.out"
check "hwcheck --cpu with a board's cpuinfo: aarch64, aes pmull, hardware AES and GHASH" \
    test "$(j "$d/cpu-a78.out" "" "(d['cpu']['arch'], d['cpu']['features'], d['cpu']['hw_aes'], d['cpu']['hw_ghash'])")" = \
    "('aarch64', ['aes', 'pmull'], True, True)"

# --- aarch64: Debian's arm64 libcrypto, fetched with apt-get download, never installed --------
fetch_arm64() {
    ls "$cache"/libssl3_*_arm64.deb >/dev/null 2>&1 && return 0
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        dpkg --add-architecture arm64 || return 1
    fi
    apt-cache show libssl3:arm64 >/dev/null 2>&1 || apt-get update -qq || return 1
    mkdir -p "$cache" && (cd "$cache" && apt-get download -q libssl3:arm64)
}
a64=""
if fetch_arm64 >"$d/fetch.log" 2>&1; then
    deb=$(find "$cache" -name 'libssl3_*_arm64.deb' | sort | tail -n 1)
    mkdir -p "$d/arm64" && dpkg-deb -x "$deb" "$d/arm64"
    a64=$(find "$d/arm64" -name libcrypto.so.3 | head -n 1)
fi
if [ -z "$a64" ]; then
    skip "hwcheck aarch64 libcrypto: could not fetch libssl3:arm64 ($(tail -n 1 "$d/fetch.log"))"
elif ! command -v aarch64-linux-gnu-objdump >/dev/null; then
    skip "hwcheck aarch64 libcrypto: no aarch64-linux-gnu-objdump (binutils-aarch64-linux-gnu)"
else
    run a64 --json "$a64"
    aese=$(j "$d/a64.out" /libcrypto.so.3 "l['insns'].get('aese', 0)")
    pmull=$(j "$d/a64.out" /libcrypto.so.3 "l['insns'].get('pmull', 0) + l['insns'].get('pmull2', 0)")
    check "hwcheck aarch64 libcrypto: arch aarch64 via aarch64-linux-gnu-objdump, verdict hardware" \
        test "$(j "$d/a64.out" /libcrypto.so.3 "l['arch'] + ' ' + l['objdump'] + ' ' + l['verdict']")" = \
        "aarch64 aarch64-linux-gnu-objdump hardware"
    check "hwcheck aarch64 libcrypto: aese $aese > 0 and pmull/pmull2 $pmull > 0" \
        test "$aese" -gt 0 -a "$pmull" -gt 0
    OBJDUMP=objdump "$HW" "$a64" >"$d/a64-host.out" 2>"$d/a64-host.err"
    echo $? >"$d/a64-host.rc"
    check "hwcheck aarch64 with a host-only objdump: exit 5 and says it cannot disassemble aarch64" \
        test "$(rc_of a64-host)" = 5 -a -n "$(grep 'cannot disassemble aarch64' "$d/a64-host.err")"
    HWCHECK_CPUINFO=$d/cpuinfo.nocrypto "$HW" "$a64" >"$d/a64-nocrypto.out" 2>&1
    check "hwcheck aarch64 libcrypto on a CPU without aes: warns that the software fallback runs" \
        grep -q "WARNING .*this CPU has no AES instructions" "$d/a64-nocrypto.out"
fi

# --- the software-only fixture, x86_64 and aarch64, two builds each -----------------------------
# build CC OUT EXTRA-FLAGS...: the fixture as a freestanding shared library (no target libc needed).
build() {
    local cc=$1 out=$2
    shift 2
    mkdir -p "$(dirname "$out")" &&
        "$cc" -O2 -ffreestanding -nostdlib -fPIC -shared -o "$out" "$@" "$FIX" 2>>"$d/build.log"
}
for arch in x86_64 aarch64; do
    cc=gcc
    [ $arch = aarch64 ] && cc=aarch64-linux-gnu-gcc
    if ! command -v $cc >/dev/null; then
        skip "hwcheck softaes $arch: no $cc"
        continue
    fi
    v1=$d/$arch/v1.0.6/libfoundation.so v2=$d/$arch/v1.1.6/libfoundation.so
    if ! build $cc "$v1" || ! build $cc "$v2" -Os -DSOFTAES_BUILT_ON='"Tue Feb  6 10:00:00 2024 UTC"'; then
        fail "hwcheck softaes $arch: fixture does not build: $(tail -n 3 "$d/build.log")"
        continue
    fi
    run soft-$arch --json --require-hw "$v1"
    check "hwcheck softaes $arch: verdict software-only, --require-hw exits 1" \
        test "$(j "$d/soft-$arch.out" v1.0.6/libfoundation.so "l['verdict']")/$(rc_of soft-$arch)" = software-only/1
    check "hwcheck softaes $arch: 0 AES/GHASH insns, AES_encrypt defined and referenced, T-tables" \
        test "$(j "$d/soft-$arch.out" v1.0.6/libfoundation.so "(l['aes_insns'], l['ghash_insns'], 'AES_encrypt' in l['sw_defined'], l['sw_ref_counts'].get('AES_encrypt', 0) > 0, l['aes_tables'])")" = \
        "(0, 0, True, True, True)"
    check "hwcheck softaes $arch: embeds OpenSSL 3.0.13, 'platform: Linux' warned as no Configure target" \
        test "$(j "$d/soft-$arch.out" v1.0.6/libfoundation.so "(l['embeds_openssl'], l['openssl_version'][:14], l['platform'], any('not an OpenSSL Configure target' in w for w in l['warnings']))")" = \
        "(True, 'OpenSSL 3.0.13', 'Linux', True)"
    run cmp-$arch --compare "$v1" "$v2"
    check "hwcheck softaes $arch --compare: md5 changed, note 'rebuilt but still software-only'" \
        grep -q "rebuilt but still software-only" "$d/cmp-$arch.out"
    run cmpj-$arch --compare --json "$v1" "$v2"
    check "hwcheck softaes $arch --compare --json: md5_changed, aes_delta 0, same note" \
        test "$(j "$d/cmpj-$arch.out" "" "(d['compare'][0]['md5_changed'], d['compare'][0]['aes_delta'], d['compare'][0]['note'].startswith('rebuilt but still software-only'))")" = \
        "(True, 0, True)"
done

# The vendor's third round: same library, now with the instructions -> "now hardware".
if [ -n "$a64" ] && [ -f "$d/aarch64/v1.1.6/libfoundation.so" ]; then
    mkdir -p "$d/aarch64/fix2" && cp "$a64" "$d/aarch64/fix2/libfoundation.so"
    run cmp3 --compare "$d/aarch64/v1.0.6/libfoundation.so" "$d/aarch64/v1.1.6/libfoundation.so" \
        "$d/aarch64/fix2/libfoundation.so"
    check "hwcheck --compare v1.0.6 v1.1.6 fix2: the last column says 'now hardware'" \
        grep -q "rebuilt but still software-only.*now hardware" "$d/cmp3.out"
fi

# Stripped and hidden: no symbols left, the AES tables and build strings still give it away.
if build gcc "$d/stripped/libvendor.so" -fvisibility=hidden -DSOFTAES_EXPORT= && strip "$d/stripped/libvendor.so"; then
    run stripped --json "$d/stripped/libvendor.so"
    check "hwcheck stripped softaes: no symbols, still software-only (T-tables, build strings)" \
        test "$(j "$d/stripped.out" libvendor.so "(l['sw_defined'], l['aes_tables'], l['verdict'])")" = "([], True, 'software-only')"
fi

# A valid target but no-asm: the other build trap.
if build gcc "$d/noasm/libnoasm.so" -DSOFTAES_PLATFORM='"linux-x86_64"' \
    -DSOFTAES_CFLAGS='"gcc -fPIC -O2 -DOPENSSL_NO_ASM"'; then
    run noasm --json "$d/noasm/libnoasm.so"
    check "hwcheck no-asm build: warned for OPENSSL_NO_ASM, not for platform linux-x86_64" \
        test "$(j "$d/noasm.out" libnoasm.so "(l['no_asm'], [w[:22] for w in l['warnings']])")" = \
        "(True, ['built with no-asm / OP'])"
fi

# --- not a crypto library, and bad input ---------------------------------------------------------
libz=$(ldconfig -p | awk '/libz\.so\.1 .*x86-64/ { print $NF; exit }')
run libz --json --require-hw "${libz:-/usr/lib/x86_64-linux-gnu/libz.so.1}"
check "hwcheck libz: verdict no-aes; --require-hw exits 1 (nothing with hardware AES)" \
    test "$(j "$d/libz.out" "" "d['libraries'][0]['verdict']")/$(rc_of libz)" = no-aes/1

echo "just text" >"$d/notes.txt"
run text "$d/notes.txt"
run missing "$d/no-such-lib.so"
run usage --no-such-option
check "hwcheck text file: exit 4, 'not an ELF file'" \
    test "$(rc_of text)" = 4 -a -n "$(grep 'notes.txt: not an ELF file' "$d/text.err")"
check "hwcheck missing path: exit 3, 'no such file'" \
    test "$(rc_of missing)" = 3 -a -n "$(grep 'no-such-lib.so: no such file' "$d/missing.err")"
check "hwcheck bad option: exit 2" test "$(rc_of usage)" = 2
run help --help
check "hwcheck --help documents exit codes 1-5" \
    test "$(grep -cE '^  [1-5]  ' "$d/help.out")" = 5
run mixed --require-hw "$sys" "$d/no-such-lib.so"
check "hwcheck good + missing file: still reports the good one, exits 3 (errors win over the gate)" \
    test "$(rc_of mixed)" = 3 -a -n "$(grep 'verdict *hardware' "$d/mixed.out")"

# --- --pid: a live process with the system libcrypto and the fixture mapped ----------------------
soft=$d/x86_64/v1.0.6/libfoundation.so
if [ -f "$soft" ]; then
    LD_PRELOAD="$soft $sys" sleep 60 &
    sleeper=$!
    for _ in $(seq 50); do grep -q libfoundation "/proc/$sleeper/maps" 2>/dev/null && break; sleep 0.1; done
    run pid --json --require-hw --pid "$sleeper"
    check "hwcheck --pid: libcrypto hardware, libfoundation software-only, libc among the others" \
        test "$(j "$d/pid.out" "" "sorted((l['label'], l['verdict']) for l in d['libraries']) + ['libc.so.6' in d['other_libraries']]")" = \
        "[('libcrypto.so.3', 'hardware'), ('libfoundation.so', 'software-only'), True]"
    check "hwcheck --pid --require-hw: exits 1 (a software-only library is mapped)" test "$(rc_of pid)" = 1
    run pidtext --pid "$sleeper"
    check "hwcheck --pid text: names the process and summarises" \
        grep -q "^process $sleeper (sleep): .* checked, 2 with AES or OpenSSL" "$d/pidtext.out"
    kill "$sleeper" 2>/dev/null
    wait "$sleeper" 2>/dev/null
    sleeper=""
fi
run nopid --pid 999999999
check "hwcheck --pid of no process: exit 3" test "$(rc_of nopid)" = 3

# --- a target board's userland: busybox sh, awk, od, grep... plus binutils, and nothing else ----
if command -v busybox >/dev/null && [ -f "$soft" ]; then
    mkdir -p "$d/bb"
    for t in sh awk od grep sed tr md5sum wc cut mktemp sort head tail cat basename uname rm; do
        ln -sf "$(command -v busybox)" "$d/bb/$t"
    done
    for t in objdump readelf strings; do ln -sf "$(command -v $t)" "$d/bb/$t"; done
    PATH=$d/bb "$d/bb/sh" "$HW" --json "$sys" "$soft" >"$d/bb.json" 2>"$d/bb.err"
    "$HW" --json "$sys" "$soft" >"$d/gnu.json" 2>&1
    check "hwcheck under busybox sh + busybox tools + binutils: same JSON as with GNU tools" \
        cmp "$d/bb.json" "$d/gnu.json"
else
    skip "hwcheck under busybox: busybox not installed"
fi
