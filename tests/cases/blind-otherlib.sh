#!/usr/bin/env bash
# blind-otherlib: Programs that do their TLS with GnuTLS (wget; git ls-remote, whose
# git-remote-https uses libcurl-gnutls) never touch OpenSSL: under the preload they must run
# unchanged (output, exit code: git fails the protocol against s_server, the same way both
# times), print exactly one tlsmeter notice naming GnuTLS and its version, and leave a trace
# (header, blind what "other_tls", end) that names the library, its version (checked against
# gnutls_check_version through ctypes) and the calls counted; the analyzer says so and
# `tlsmeter record` prints it. Specific: curl loads libgnutls.so.30 too (through librtmp) but
# does its TLS with OpenSSL: no notice, no other_tls entry. NSS (a program setting up one
# SSL_ImportFD socket, tests/fixtures/otherlib/nssprobe.c; NSS's libssl3.so is not OpenSSL's
# libssl.so.3) and a stand-in for BoringSSL under its own soname (fakebssl.c: exports SSL_read,
# says "BoringSSL") get their notice and entry too; the fork is left alone (lib.left_alone).
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
"$TLSM_TOP/scripts/install-deps" --extra "wget git libnss3-dev pkg-config" >/dev/null 2>&1
d=$(case_dir)
tls_init "$d"
tls_need_preload blind-otherlib
if under_qemu; then
    skip "blind-otherlib: no $(target_arch) wget or git under qemu"
    exit 0
fi
ANALYZE=$O/tlsmeter-analyze
gnutls_version=$("$TLSM_PY" -c 'import ctypes
l = ctypes.CDLL("libgnutls.so.30")
l.gnutls_check_version.restype = ctypes.c_char_p
print(l.gnutls_check_version(None).decode())' 2>/dev/null)
if [ -z "$gnutls_version" ]; then
    skip "blind-otherlib: libgnutls.so.30 is not installed"
    exit 0
fi
tls_make_file file.bin $((512 * 1024 + 17))
if ! tls_server_start any ""; then
    fail "blind-otherlib: openssl s_server did not start"
    exit 0
fi
url=https://127.0.0.1:$TLS_PORT

# san_hangs CMD...: under SAN builds, does CMD hang with only the sanitizer runtimes preloaded
# (no tlsmeter)? wget and curl 7.88 do with libasan (a futex wait before any connect): those
# parts then skip, since the hang is not tlsmeter's doing.
san_hangs() {
    local rc
    [ -n "${TLSM_SAN:-}" ] || return 1
    timeout -k 1 10 env LD_PRELOAD="${TLSM_PRELOAD%:*}" "$@" >/dev/null 2>&1
    rc=$?
    [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]
}
SAN_SKIP="hangs with only the sanitizer runtime preloaded (not tlsmeter's doing)"

# check_other NAME PREFIX: one notice naming GnuTLS, one trace with one other_tls entry.
check_other() {
    local name=$1 p=$2 n
    n=$(tls_notes "$p.traced.err")
    if [ "$n" -eq 1 ] &&
        grep -q "^tlsmeter: .*libgnutls\.so\.30 is GnuTLS $gnutls_version, which does TLS" "$p.traced.err"; then
        pass "blind-otherlib $name: one notice: $(grep '^tlsmeter:' "$p.traced.err" | head -c 160)"
    else
        fail "blind-otherlib $name: want one notice naming GnuTLS $gnutls_version, got $n: $(head -c 300 "$p.traced.err")"
    fi
    tls_traces "$p.t.*.jsonl"
    if [ "${#TRACES[@]}" -ne 1 ]; then
        fail "blind-otherlib $name: ${#TRACES[@]} traces, want 1 (from the GnuTLS process)"
        return
    fi
    tls_check "blind-otherlib $name trace: header, blind other_tls GnuTLS $gnutls_version, end" \
        "$TLSM_PY" - "${TRACES[0]}" "$gnutls_version" <<'EOF'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert ev[0]["ev"] == "header" and ev[-1]["ev"] == "end", [e["ev"] for e in ev]
bl = [e for e in ev if e["ev"] == "blind"]
assert len(bl) == 1, bl
b = bl[0]
assert b["what"] == "other_tls" and b["library"] == "GnuTLS", b
assert b["version"] == sys.argv[2], (b["version"], sys.argv[2])
assert b["path"].endswith("/libgnutls.so.30") and b["reasons"] == ["other_library"], b
assert not [e for e in ev if e["ev"] in ("rec", "read")], "OpenSSL events in a GnuTLS process"
end = ev[-1]
x = [x for x in end["blind"] if x["what"] == "other_tls"]
assert len(x) == 1 and x[0]["calls"] >= 2, end["blind"]
assert end["hooks"]["gnutls_handshake"] >= 1, end["hooks"]
assert "gnutls_handshake" not in end["unfired"], end["unfired"]
print("ok", b["path"], b["version"], x[0]["calls"], "calls")
EOF
    "$ANALYZE" "${TRACES[0]}" >"$p.report" 2>&1
    if grep -q "\[other-tls\] .*libgnutls\.so\.30 (GnuTLS $gnutls_version) does TLS in this process" "$p.report"; then
        pass "blind-otherlib $name: the report names GnuTLS (other-tls)"
    else
        fail "blind-otherlib $name: no other-tls verdict: $(grep -A3 verdicts "$p.report" | head -c 300)"
    fi
}

# wget: a real download, checked byte for byte.
test_wget() {
    local p=$d/wget cmd why
    cmd=(wget -q --no-check-certificate -O "$p.body" "$url/file.bin")
    tls_run "$p.plain" "" "${cmd[@]}"
    mv "$p.body" "$p.plain.body"
    tls_run "$p.traced" "$p.t.%p.jsonl" "${cmd[@]}"
    mv "$p.body" "$p.traced.body" 2>/dev/null
    if [ "$(cat "$p.plain.rc")" != 0 ]; then
        fail "blind-otherlib wget: the untraced download failed (rc $(cat "$p.plain.rc")): $(head -c 200 "$p.plain.err")"
    elif ! why=$(tls_same_run x "$p.plain" "$p.traced"); then
        fail "blind-otherlib wget: $why"
    elif [ "$(tls_sha "$p.traced.body")" != "$(tls_sha "$TLS_WWW/file.bin")" ]; then
        fail "blind-otherlib wget: wrong body"
    else
        pass "blind-otherlib wget: output, exit code and download unchanged"
    fi
    check_other wget "$p"
}

# git ls-remote: git-remote-https (libcurl-gnutls) handshakes, asks for info/refs, and fails
# on s_server's answer; the failure must be the same with the preload.
test_git() {
    local p=$d/git why
    tls_run "$p.plain" "" "${git_cmd[@]}"
    tls_run "$p.traced" "$p.t.%p.jsonl" "${git_cmd[@]}"
    if ! why=$(tls_same_run x "$p.plain" "$p.traced"); then
        fail "blind-otherlib git: $why"
    else
        pass "blind-otherlib git: exit code $(cat "$p.traced.rc") and output unchanged"
    fi
    check_other git "$p"
}

# tlsmeter record names it instead of a generic "no trace". Under SAN builds the sanitizer
# runtimes come first in LD_PRELOAD; record appends the library after them.
test_record() {
    local p=$d/rec lib=${TLSM_PRELOAD##*:} san=
    [ "$lib" != "$TLSM_PRELOAD" ] && san=${TLSM_PRELOAD%:*}
    LD_PRELOAD=$san "$TLSM_TOP/scripts/tlsmeter" record --lib "$lib" -o "$p.t.%p.jsonl" -- \
        wget -q --no-check-certificate -O /dev/null "$url/file.bin" 2>"$p.err"
    if grep -q "^tlsmeter:   blind: .*libgnutls\.so\.30 (GnuTLS $gnutls_version): another TLS library" "$p.err"; then
        pass "blind-otherlib record: $(grep 'blind:' "$p.err" | head -c 160)"
    else
        fail "blind-otherlib record: no blind line for GnuTLS: $(head -c 300 "$p.err")"
    fi
}

git_cmd=(env HOME="$d" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 git -c http.sslVerify=false
    ls-remote "$url/repo.git")
# Both come from the install-deps call above; without root or a mirror they may be missing.
if ! command -v wget >/dev/null; then
    skip "blind-otherlib wget, record: wget is not installed and install-deps could not install it"
elif san_hangs wget -q --no-check-certificate -O /dev/null "$url/file.bin"; then
    skip "blind-otherlib wget, record: wget $SAN_SKIP"
else
    test_wget
    test_record
fi
if ! command -v git >/dev/null; then
    skip "blind-otherlib git: git is not installed and install-deps could not install it"
elif san_hangs "${git_cmd[@]}"; then
    skip "blind-otherlib git: git ls-remote $SAN_SKIP"
else
    test_git
fi

# curl: GnuTLS loaded (librtmp), never called: nothing about it.
if ! tls_client_ok curl; then
    skip "blind-otherlib curl: $TLS_CLIENT_SKIP"
elif ! ldd "$(command -v curl)" | grep -q libgnutls; then
    skip "blind-otherlib curl: this curl does not load GnuTLS (nothing to be specific about)"
else
    p=$d/curl
    tls_client curl "$TLS_PORT" file.bin "$p" "$p.t.%p.jsonl"
    tls_traces "$p.t.*.jsonl"
    if [ "$(cat "$p.rc")" != 0 ] || [ "${#TRACES[@]}" -ne 1 ]; then
        fail "blind-otherlib curl: rc $(cat "$p.rc"), ${#TRACES[@]} traces"
    elif grep -q 'GnuTLS' "$p.err" || grep -q '"other_tls"' "${TRACES[0]}"; then
        fail "blind-otherlib curl: GnuTLS named although curl never called it: $(grep -m1 GnuTLS "$p.err" "${TRACES[0]}" | head -c 200)"
    else
        pass "blind-otherlib curl: libgnutls.so.30 loaded but unused: no notice, no other_tls entry"
    fi
fi

# fixture NAME: run one fixture program untraced and traced; same output; one notice
# matching $2; the trace's blind other_tls entry names library $3.
fixture() {
    local name=$1 notice=$2 lib=$3 p=$d/$1 n
    tls_run "$p.plain" "" "$d/$name"
    tls_run "$p.traced" "$p.t.%p.jsonl" "$d/$name"
    if ! why=$(tls_same_run x "$p.plain" "$p.traced"); then
        fail "blind-otherlib $name: $why"
        return
    fi
    n=$(tls_notes "$p.traced.err")
    if [ "$n" -eq 1 ] && grep -q "^tlsmeter: $notice, which does TLS" "$p.traced.err"; then
        pass "blind-otherlib $name: output unchanged, one notice: $(grep '^tlsmeter:' "$p.traced.err" | head -c 120)"
    else
        fail "blind-otherlib $name: want one notice matching '$notice', got $n: $(head -c 300 "$p.traced.err")"
    fi
    tls_traces "$p.t.*.jsonl"
    tls_check "blind-otherlib $name trace: blind other_tls $lib" "$TLSM_PY" - "${TRACES[@]}" "$lib" <<'EOF2'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
bl = [e for e in ev if e["ev"] == "blind" and e.get("what") == "other_tls"]
assert len(bl) == 1 and bl[0]["library"] == sys.argv[2], bl
libs = [e for e in ev if e["ev"] == "lib"]
assert all(l.get("left_alone") == "other_tls" for l in libs), libs
assert ev[-1]["ev"] == "end" and any(x["what"] == "other_tls" for x in ev[-1]["blind"])
print("ok", bl[0]["path"], bl[0]["version"])
EOF2
}

fx=$TLSM_TOP/tests/fixtures/otherlib
read -ra nss_flags <<<"$(pkg-config --cflags --libs nss 2>/dev/null)"
if ! cc -o "$d/nssprobe" "$fx/nssprobe.c" "${nss_flags[@]}" 2>"$d/nss.cc.err"; then
    skip "blind-otherlib nssprobe: NSS headers missing (libnss3-dev): $(head -c 120 "$d/nss.cc.err")"
else
    nss_version=$("$d/nssprobe" | sed -n 's/^nss \([^ ]*\) .*/\1/p')
    fixture nssprobe ".*/libssl3\.so is NSS $nss_version" NSS
fi
if cc -shared -fPIC -Wl,-soname,libfakebssl.so -o "$d/libfakebssl.so" "$fx/fakebssl.c" &&
    cc -o "$d/bsslapp" "$fx/bsslapp.c" "$d/libfakebssl.so" -Wl,-rpath,"$d"; then
    fixture bsslapp ".*/libfakebssl\.so is BoringSSL" BoringSSL
else
    fail "blind-otherlib bsslapp: fixture did not build"
fi
