#!/usr/bin/env python3
"""gotsnap.py PID | gotsnap.py --compare SNAPSHOT PID: every GOT entry of every ELF object mapped in process PID, read from outside
through /proc/PID/mem (tests/cases/attach-*.sh: a detach must leave each as it was).

Prints one line per 8-byte entry, "OBJECT OFFSET VALUE" (offset into the object's .got or
.got.plt, value in hex), for 64-bit objects. The sections come from the object's file (read
through /proc/PID/root), the load base from /proc/PID/maps. tlsmeter's own libraries are left
out: their GOT is theirs to change.

--compare: the entries now against a snapshot taken before an attach. Prints each entry that
differs and exits 1 if any points into tlsmeter's libraries or held anything but a lazy stub
(an address inside its own object) before: the dynamic linker binding a lazy entry meanwhile
(libc's PLT calls into ld.so the first time a dlopen runs) is the loader's, not tlsmeter's.
Prints "same N" / "bound N" counts on success."""
import os
import struct
import sys


def sections(path):
    with open(path, 'rb') as f:
        # Mapped files that are not objects (a trace file: large and sparse) are not read.
        if f.read(5) != b'\x7fELF\x02' or os.fstat(f.fileno()).st_size > 1 << 30:
            return None, []
        f.seek(0)
        data = f.read()
    if data[:4] != b'\x7fELF' or data[4] != 2:
        return None, []
    (e_type, _, _, _, e_phoff, e_shoff, _, _, e_phentsize, e_phnum, e_shentsize, e_shnum,
     e_shstrndx) = struct.unpack_from('<HHIQQQIHHHHHH', data, 16)
    first_load = None
    for i in range(e_phnum):
        p_type, _, p_off, p_vaddr = struct.unpack_from('<IIQQ', data, e_phoff + i * e_phentsize)
        if p_type == 1 and first_load is None:
            first_load = (p_off, p_vaddr)
    if not e_shoff or e_shstrndx >= e_shnum:
        return first_load, []
    def sh(i):
        return struct.unpack_from('<IIQQQQIIQQ', data, e_shoff + i * e_shentsize)
    strtab = sh(e_shstrndx)
    out = []
    for i in range(e_shnum):
        name_off, _, _, addr, _, size = sh(i)[:6]
        end = data.index(b'\0', strtab[4] + name_off)
        name = data[strtab[4] + name_off:end].decode()
        if name in ('.got', '.got.plt') and size:
            out.append((name, addr, size))
    return (e_type, first_load), out


def maps(pid):
    """{path: (lowest start, highest end)} of the mapped files."""
    out = {}
    with open(f'/proc/{pid}/maps') as f:
        for line in f:
            parts = line.split()
            if len(parts) < 6 or not parts[5].startswith('/'):
                continue
            lo, hi = (int(x, 16) for x in parts[0].split('-'))
            a, b = out.get(parts[5], (lo, hi))
            out[parts[5]] = (min(a, lo), max(b, hi))
    return out


def compare(snap, pid):
    ranges = maps(pid)
    ours = [r for p, r in ranges.items() if 'libtlsmeter' in os.path.basename(p)]
    before = {}
    with open(snap) as f:
        for line in f:
            obj, off, val = line.split()
            before[(obj, off)] = int(val, 16)
    same = bound = bad = 0
    for line in snapshot(pid):
        obj, off, val = line.split()
        old, new = before.get((obj, off)), int(val, 16)
        if old is None or old == new:
            same += old is not None
            continue
        path = obj.rsplit('.got', 1)[0]
        lo, hi = ranges.get(path, (0, 0))
        into_ours = any(a <= new < b for a, b in ours)
        if lo <= old < hi and not into_ours:
            bound += 1
            continue
        bad += 1
        print(f'{obj} {off}: {old:#x} -> {new:#x}{" (tlsmeter)" if into_ours else ""}')
    print(f'same {same} bound {bound} changed {bad}')
    return 1 if bad else 0


def main():
    if sys.argv[1] == '--compare':
        sys.exit(compare(sys.argv[2], int(sys.argv[3])))
    for line in snapshot(int(sys.argv[1])):
        print(line)


def snapshot(pid):
    bases = {}
    with open(f'/proc/{pid}/maps') as f:
        for line in f:
            parts = line.split()
            if len(parts) < 6 or not parts[5].startswith('/'):
                continue
            start = int(parts[0].split('-')[0], 16)
            off = int(parts[2], 16)
            bases.setdefault(parts[5], (start, off))
    mem = os.open(f'/proc/{pid}/mem', os.O_RDONLY)
    for path, (start, off) in sorted(bases.items()):
        if 'libtlsmeter' in os.path.basename(path) or off != 0:
            continue
        try:
            head, secs = sections(f'/proc/{pid}/root{path}')
        except (OSError, ValueError, struct.error):
            continue
        if not head or not secs:
            continue
        e_type, first_load = head
        base = start - (first_load[1] & ~0xfff) if e_type == 3 else 0
        for name, addr, size in secs:
            try:
                blob = os.pread(mem, size, base + addr)
            except OSError:
                continue
            for k in range(0, len(blob) - 7, 8):
                yield f'{path}{name} {k:#x} {struct.unpack_from("<Q", blob, k)[0]:#x}'
    os.close(mem)


if __name__ == '__main__':
    main()
