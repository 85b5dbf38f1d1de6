#!/usr/bin/env python3
"""alter_table.py IN OUT: a copy of IN (an ELF64 shared object holding OpenSSL 3's default
provider) whose AES-256-GCM dispatch table has one function id changed (FINAL, 5 -> 15), so
that tlsmeter's shape check must refuse the copy (tests/cases/vendor-reach.sh). The table is
found the way the preload finds it, from the file: the name string, the relative relocation
(RELA, R_X86_64_RELATIVE or R_AARCH64_RELATIVE) that points at it from the OSSL_ALGORITHM,
the one next to it that points at the OSSL_DISPATCH array. Prints the table's offset."""
import struct
import sys

NAME = b"AES-256-GCM:id-aes256-GCM:2.16.840.1.101.3.4.1.46\0"
RELATIVE = {62: 8, 183: 1027}  # e_machine -> relative relocation type


def main():
    src, dst = sys.argv[1], sys.argv[2]
    b = bytearray(open(src, "rb").read())
    if b[:4] != b"\x7fELF" or b[4] != 2 or b[5] != 1:
        sys.exit("alter_table: %s is not a little-endian ELF64 file" % src)
    machine = struct.unpack_from("<H", b, 18)[0]
    phoff, = struct.unpack_from("<Q", b, 32)
    phentsize, phnum = struct.unpack_from("<HH", b, 54)
    loads, dyn = [], None
    for i in range(phnum):
        p_type, _, p_off, p_vaddr, _, p_filesz, _, _ = struct.unpack_from("<IIQQQQQQ", b, phoff + i * phentsize)
        if p_type == 1:
            loads.append((p_vaddr, p_off, p_filesz))
        elif p_type == 2:
            dyn = (p_off, p_filesz)

    def off(va):
        for v, o, n in loads:
            if v <= va < v + n:
                return o + va - v
        sys.exit("alter_table: address 0x%x is in no PT_LOAD" % va)

    def vaddr(fo):
        for v, o, n in loads:
            if o <= fo < o + n:
                return v + fo - o
        sys.exit("alter_table: offset 0x%x is in no PT_LOAD" % fo)

    tags = {}
    for k in range(dyn[1] // 16):
        t, v = struct.unpack_from("<qQ", b, dyn[0] + 16 * k)
        tags.setdefault(t, v)
    rela, relasz = off(tags[7]), tags[8]
    rel = {}
    for k in range(relasz // 24):
        r_off, r_info, r_add = struct.unpack_from("<QQq", b, rela + 24 * k)
        if r_info & 0xffffffff == RELATIVE[machine]:
            rel[r_off] = r_add
    at = 0
    while True:
        at = b.find(NAME, at)
        if at < 0:
            sys.exit("alter_table: no AES-256-GCM name string")
        if at == 0 or b[at - 1] == 0:
            break
        at += 1
    s = vaddr(at)
    for w, a in rel.items():
        if a == s and w + 16 in rel and b[off(rel[w + 8]):off(rel[w + 8]) + 17] == b"provider=default\0":
            d = off(rel[w + 16])
            for k in range(20):
                fid, = struct.unpack_from("<i", b, d + 16 * k)
                if fid == 5:
                    struct.pack_into("<i", b, d + 16 * k, 15)
                    open(dst, "wb").write(b)
                    print("altered the AES-256-GCM table at file offset 0x%x (entry %d: id 5 -> 15)" % (d, k))
                    return
    sys.exit("alter_table: no default-provider AES-256-GCM table found")


if __name__ == "__main__":
    main()
