#!/usr/bin/env python3
"""implcheck.py: checks of the impl events (tests/cases/trust-impl.sh, aarch64-impl.sh).

  implcheck.py rules TRACE
      each app impl event's aes/ghash/stitched against what OpenSSL 3.0's pairing rules (3.5's
      VAES/AVX-512 kernel first) give
      for the instance's effective capability words (lib.cpuinfo), decoded here on their own,
      not from lib.caps; prints "aes ghash" of the first event.
  implcheck.py symbols TRACE OBJECT
      resolves the fn_*_off of the impl events whose module is OBJECT against OBJECT's
      .symtab (nm) and checks the names the preload gave agree with the real symbols.
  implcheck.py report JSON CIPHER CLASS [--no-verdict ID] [--not-in WORD] [--has WORD]
      the analyzer's --json row for CIPHER (native) has impl CLASS; no verdict ID; the
      detail does not contain WORD / contains WORD.
Exit 0 when all hold, else a reason on stdout and exit 1.
"""
import json
import os
import re
import subprocess
import sys


def events(path):
    for line in open(path, errors="replace"):
        try:
            yield json.loads(line)
        except ValueError:
            continue


def words(cpuinfo):
    m = re.search(r"OPENSSL_ia32cap=0x([0-9a-f]+):0x([0-9a-f]+)", cpuinfo)
    if m:
        return "x86_64", int(m.group(1), 16), int(m.group(2), 16)
    m = re.search(r"OPENSSL_armcap=0x([0-9a-f]+)", cpuinfo)
    if m:
        return "aarch64", int(m.group(1), 16), 0
    return None, 0, 0


def expected(arch, w0, w1=0, version=""):
    """crypto/modes/gcm128.c (CRYPTO_gcm128_init) and cipher_aes_gcm_hw*.c, 3.0; 3.5 first
    asks ossl_vaes_vpclmulqdq_capable (aes-gcm-avx512.pl: AVX512F, DQ, BW, VL, VAES and
    VPCLMULQDQ in the second word, whatever the AES-NI bit says) for its VAES/AVX-512 kernel."""
    bit = lambda n: (w0 >> n) & 1
    vaes = sum(1 << n for n in (42, 41, 31, 30, 17, 16))
    if arch == "x86_64" and version.startswith("OpenSSL 3.5.") and w1 & vaes == vaes:
        return "vaes-avx512", "vpclmul-avx512", True
    if arch == "x86_64":
        aes = "aesni" if bit(57) else "bsaes" if bit(41) else "table"
        ghash = ("clmul-avx" if bit(54) and bit(60) else "clmul") if bit(33) else "4bit"
        return aes, ghash, aes == "aesni" and ghash == "clmul-avx"
    aes = "armv8" if bit(2) else "vpaes" if bit(0) else "table"
    # NEON_CAPABLE (gcm_ghash_neon) is defined for 32-bit ARM only: aarch64 without PMULL
    # hashes with the C 4-bit table.
    ghash = "pmull" if bit(5) else "4bit"
    return aes, ghash, aes == "armv8" and ghash == "pmull"


def rules(trace):
    evs = list(events(trace))
    libs = {e["id"]: e for e in evs if e.get("ev") == "lib"}
    impls = [e for e in evs if e.get("ev") == "impl"]
    recs = [e for e in evs if e.get("ev") == "rec" and e.get("dir", "in") == "in" and "GCM" in e.get("cipher", "")]
    if not impls:
        return "no impl event (%d GCM records)" % len(recs)
    without = [r for r in recs if "impl" not in r]
    if without:
        return "%d of %d GCM records carry no impl id" % (len(without), len(recs))
    for e in impls:
        lib = libs.get(e.get("lib"), {})
        arch, w0, w1 = words(lib.get("cpuinfo", ""))
        if not arch:
            return "impl %s: lib %s has no capability words" % (e["id"], e.get("lib"))
        want = expected(arch, w0, w1, lib.get("version", ""))
        got = (e.get("aes"), e.get("ghash"), e.get("stitched"))
        if got != want:
            return "impl %s: got aes/ghash/stitched %s, OpenSSL's rules on 0x%x give %s" % (
                e["id"], got, w0, want)
    print(impls[0]["aes"], impls[0]["ghash"])
    return None


SYMS = {
    "block": {"aesni": {"aesni_encrypt"}, "table": {"AES_encrypt", "asm_AES_encrypt"},
              "bsaes": {"AES_encrypt", "asm_AES_encrypt"}, "vpaes": {"vpaes_encrypt"},
              "armv8": {"aes_v8_encrypt"}},
    "stream": {"aesni": {"aesni_ctr32_encrypt_blocks"},
               "bsaes": {"ossl_bsaes_ctr32_encrypt_blocks"},
               "armv8": {"aes_v8_ctr32_encrypt_blocks"}},
    "ghash": {"clmul-avx": {"gcm_ghash_avx"}, "clmul": {"gcm_ghash_clmul"},
              "4bit": {"gcm_ghash_4bit", "ossl_gcm_ghash_4bit"}, "pmull": {"gcm_ghash_v8"},
              "neon": {"gcm_ghash_neon"}},
}


def symbols(trace, obj):
    obj = os.path.realpath(obj)
    syms = {}
    out = subprocess.run(["nm", "--defined-only", obj], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3:
            syms.setdefault(int(f[0], 16), set()).add(f[2])
    if not syms:
        return "nm found no symbols in %s" % obj
    n = 0
    for e in events(trace):
        if e.get("ev") != "impl" or os.path.realpath(e.get("fn_block_module", "")) != obj:
            continue
        n += 1
        for fn, name in (("block", e["aes"]), ("stream", e["aes"]), ("ghash", e["ghash"])):
            key = "fn_%s_off" % fn
            want = SYMS[fn].get(name)
            if key not in e:
                if fn == "stream" and want:
                    return "impl %s: %s needs a stream function %s, none seen" % (
                        e["id"], name, sorted(want))
                continue
            got = syms.get(int(e[key], 16), set())
            if not want or not got & want:
                return "impl %s: %s named %s, but %s is %s in the symbol table" % (
                    e["id"], fn, name, e[key], sorted(got) or "no symbol")
        print("impl %s: aes %s ghash %s agree with the symbols" % (e["id"], e["aes"], e["ghash"]))
    return None if n else "no impl event for %s" % obj


def report(js, cipher, cls, opts):
    d = json.load(open(js))
    rows = [r for r in d.get("ciphers", []) if r.get("cipher") == cipher and
            r.get("path") == "native"]
    if not rows:
        return "no native %s row in the report" % cipher
    r = rows[0]
    if r.get("impl") != cls:
        return "%s is %s (%s), want %s" % (cipher, r.get("impl"), r.get("impl_detail"), cls)
    vids = [v.get("id") for v in d.get("verdicts", [])]
    for flag, arg in opts:
        if flag == "--no-verdict" and arg in vids:
            return "verdict %s present: %s" % (arg, vids)
        if flag == "--not-in" and arg in r.get("impl_detail", ""):
            return "detail %r contains %r" % (r.get("impl_detail"), arg)
        if flag == "--has" and arg not in r.get("impl_detail", ""):
            return "detail %r lacks %r" % (r.get("impl_detail"), arg)
    print("%s: %s (%s)" % (cipher, cls, r.get("impl_detail")))
    return None


def main(a):
    if a[0] == "rules":
        why = rules(a[1])
    elif a[0] == "symbols":
        why = symbols(a[1], a[2])
    else:
        why = report(a[1], a[2], a[3], list(zip(a[4::2], a[5::2])))
    if why:
        print(why)
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
