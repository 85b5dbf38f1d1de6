/* tracemap.c: the mapped trace file. A thread reserves a chunk of the file (one atomic
 * step on a shared cursor), allocates its blocks with fallocate(2) and maps it MAP_SHARED;
 * its lines are then plain memcpy's. The blocks are allocated before the first store
 * because a store into a mapped page of a sparse file on a full disk raises SIGBUS in the
 * program; a chunk that cannot be allocated is never mapped. Space a chunk did not use
 * stays zero; at exit it is squeezed out, so a trace of a normal exit is plain text. */
#include "trace/tracemap.h"
#include "trace/trace2.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels say EINVAL: faults come later */
#endif

#define CHUNK_MIN (256 * 1024)
/* Under RLIMIT_AS, a trace whose first chunk would be smaller is written with write(2). */
#define TIGHT (64 * 1024)
/* Blocks kept allocated past the cursor, so the end line (and a warning) still fit when the
 * disk is full: each chunk allocates this much beyond its end. */
#define END_RESERVE (16 * 1024)

/* In a MAP_SHARED anonymous page: a forked child sees the same cursor, so a child that
 * cannot create its own trace can still put its warning into ours without overwriting. */
struct shared {
    _Atomic uint64_t next;      /* file bytes reserved so far */
    _Atomic uint64_t first_gap; /* lowest offset of unused (zero) space, UINT64_MAX: none */
};

static struct shared *sh;
static size_t chunk, page;

size_t tlsm_tmap_chunk_size(void)
{
    if (!chunk) {
        long p = sysconf(_SC_PAGESIZE);
        page = p > 0 ? (size_t)p : 4096;
        chunk = (CHUNK_MIN + page - 1) / page * page;
    }
    return chunk;
}

/* Address space this process has mapped (VmSize), from /proc/self/statm; 0: unknown. */
static uint64_t vm_size(void)
{
    char buf[64];
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    uint64_t pages = 0;
    for (const char *c = buf; *c >= '0' && *c <= '9'; c++)
        pages = pages * 10 + (uint64_t)(*c - '0');
    return pages * page;
}

static uint64_t as_left; /* address space left under RLIMIT_AS at the last look */

/* The next chunk's size. Without RLIMIT_AS: CHUNK_MIN. Under it, a 64th of the address
 * space left (two chunks at most are mapped at once per thread while one is replaced), at
 * least two lines; 0 when even that is more than a 64th: the trace gives up before the
 * program's own mappings could fail for want of the space it holds. */
static size_t chunk_for_limit(void)
{
    struct rlimit rl;
    size_t c = tlsm_tmap_chunk_size(), least = (2 * 4096 + page - 1) / page * page;
    if (getrlimit(RLIMIT_AS, &rl) || rl.rlim_cur == RLIM_INFINITY)
        return c;
    uint64_t used = vm_size();
    as_left = used && used < rl.rlim_cur ? rl.rlim_cur - used : 0;
    uint64_t fair = as_left / 64 / page * page;
    if (fair < least)
        return 0;
    return fair < c ? (size_t)fair : c;
}

bool tlsm_tmap_tight(void)
{
    return chunk_for_limit() < TIGHT;
}

uint64_t tlsm_tmap_as_left(void)
{
    return as_left;
}

bool tlsm_tmap_active(void)
{
    return sh != NULL;
}

bool tlsm_tmap_start(int fd)
{
    size_t c = tlsm_tmap_chunk_size();
    /* The probe reserves what will be the first chunk: EOPNOTSUPP (some network and FUSE
     * filesystems), ENOSPC and the rest all mean write(2) mode. */
    if (fallocate(fd, 0, 0, (off_t)(c + END_RESERVE)))
        return false;
    struct shared *s = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int fl = fcntl(fd, F_GETFL);
    /* pwrite on an O_APPEND descriptor appends (Linux): compaction needs real offsets. */
    if (s == MAP_FAILED || fl < 0 || fcntl(fd, F_SETFL, fl & ~O_APPEND)) {
        int e = errno;
        if (s != MAP_FAILED)
            munmap(s, page);
        if (ftruncate(fd, 0)) {
            /* nothing more to undo */
        }
        errno = e;
        return false;
    }
    atomic_store(&s->next, 0);
    atomic_store(&s->first_gap, UINT64_MAX);
    sh = s;
    return true;
}

void tlsm_tmap_gap(uint64_t off)
{
    uint64_t cur = atomic_load(&sh->first_gap);
    while (off < cur && !atomic_compare_exchange_weak(&sh->first_gap, &cur, off))
        ;
}

/* size bytes at the cursor, page-aligned when aligned (mmap offsets must be). */
static uint64_t reserve(uint64_t size, bool aligned)
{
    uint64_t cur = atomic_load(&sh->next), at;
    do
        at = aligned ? (cur + page - 1) / page * page : cur;
    while (!atomic_compare_exchange_weak(&sh->next, &cur, at + size));
    if (at > cur)
        tlsm_tmap_gap(cur);
    return at;
}

/* A chunk that could not be had: the cursor goes back when no one reserved after it (so
 * the end reserve before it is next), else the range stays a gap. */
static void give_back(uint64_t at, size_t size)
{
    uint64_t end = at + size;
    if (!atomic_compare_exchange_strong(&sh->next, &end, at))
        tlsm_tmap_gap(at);
}

/* fallocate beyond RLIMIT_FSIZE raises SIGXFSZ (core dump by default): ask first. */
static bool fits_fsize(uint64_t end)
{
    struct rlimit rl;
    return getrlimit(RLIMIT_FSIZE, &rl) || rl.rlim_cur == RLIM_INFINITY || end <= rl.rlim_cur;
}

char *tlsm_tmap_chunk(int fd, uint64_t *off, size_t *size)
{
    if (!sh)
        return errno = EBADF, NULL;
    size_t c = chunk_for_limit();
    if (!c)
        return errno = ENOMEM, NULL;
    if (!fits_fsize(atomic_load(&sh->next) + 2 * c + END_RESERVE))
        return errno = EFBIG, NULL;
    uint64_t at = reserve(c, true);
    int e;
    if (fallocate(fd, 0, (off_t)at, (off_t)(c + END_RESERVE))) {
        e = errno;
        give_back(at, c);
        return errno = e, NULL;
    }
    char *p = mmap(NULL, c, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)at);
    if (p == MAP_FAILED) {
        e = errno;
        give_back(at, c);
        return errno = e, NULL;
    }
    /* Take the write faults now, in this one call, not one per 4 KiB inside the copies;
     * EFAULT means a store would have raised SIGBUS (the filesystem found no space after
     * all, as copy-on-write ones may): give the chunk up. EINVAL: before Linux 5.14. */
    if (madvise(p, c, MADV_POPULATE_WRITE) && errno == EFAULT) {
        munmap(p, c);
        give_back(at, c);
        return errno = ENOSPC, NULL;
    }
    *off = at;
    *size = c;
    return p;
}

void tlsm_tmap_unmap(char *p, size_t size)
{
    if (p)
        munmap(p, size);
}

static bool pwrite_all(int fd, const char *p, size_t n, uint64_t at)
{
    while (n) {
        ssize_t w = pwrite(fd, p, n, (off_t)at);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w, n -= (size_t)w, at += (uint64_t)w;
    }
    return true;
}

/* The first non-NUL byte of p[r..n), n if none: a chunk's unused tail is most of a short
 * trace's file (256 KiB of zeros for a few KiB of lines), so it is skipped 8 bytes a step. */
static size_t skip_nul_run(const char *p, size_t r, size_t n)
{
    uint64_t word;
    while (r < n && !p[r] && (r & 7))
        r++;
    while (r + 8 <= n && (memcpy(&word, p + r, 8), !word))
        r += 8;
    while (r < n && !p[r])
        r++;
    return r;
}

/* Drop the NUL bytes of p[0..n) in place (JSON text never holds one); returns what is left. */
static size_t squeeze(char *p, size_t n)
{
    size_t w = 0, r = 0;
    while (r < n) {
        const char *z = memchr(p + r, 0, n - r);
        size_t run = (z ? (size_t)(z - p) : n) - r;
        memmove(p + w, p + r, run);
        w += run, r += run;
        r = skip_nul_run(p, r, n);
    }
    return w;
}

/* Called with every writer stopped (the trace's locks), from exit or before exec/_exit:
 * a static buffer, no allocation, only async-signal-safe calls. */
bool tlsm_tmap_finish(int fd, const char *end, size_t n)
{
    static char buf[64 * 1024];
    uint64_t top = atomic_load(&sh->next), from = atomic_load(&sh->first_gap);
    struct stat st;
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_size < top)
        top = (uint64_t)st.st_size; /* a reservation that failed past the end */
    uint64_t r = from < top ? from : top, w = r;
    while (r < top) {
        size_t want = top - r < sizeof(buf) ? (size_t)(top - r) : sizeof(buf);
        ssize_t k = pread(fd, buf, want, (off_t)r);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        size_t m = squeeze(buf, (size_t)k);
        if (m && !pwrite_all(fd, buf, m, w))
            return false;
        r += (uint64_t)k, w += m;
    }
    if (r < top)
        return false;
    bool ok = !n || pwrite_all(fd, end, n, w);
    atomic_store(&sh->next, w + (ok ? n : 0));
    atomic_store(&sh->first_gap, UINT64_MAX);
    return ftruncate(fd, (off_t)(w + (ok ? n : 0))) == 0 && ok;
}

/* Format 2. Copies [from, from+n) down to w through buf (from > w: the copy runs forward). */
static bool move_down(int fd, char *buf, size_t cap, uint64_t from, uint64_t n, uint64_t w)
{
    while (n) {
        size_t want = n < cap ? (size_t)n : cap;
        ssize_t k = pread(fd, buf, want, (off_t)from);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0 || !pwrite_all(fd, buf, (size_t)k, w))
            return false;
        from += (uint64_t)k, w += (uint64_t)k, n -= (uint64_t)k;
    }
    return true;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Zero space between chunks (page alignment after a small chunk, a chunk given back) from
 * r on: the offset of the next non-zero 8-byte word, or top. */
static uint64_t skip_zeros(int fd, char *buf, size_t cap, uint64_t r, uint64_t top)
{
    while (r < top) {
        size_t want = top - r < cap ? (size_t)(top - r) : cap;
        ssize_t k = pread(fd, buf, want & ~(size_t)7, (off_t)r);
        if (k < 8)
            return top;
        for (ssize_t i = 0; i + 8 <= k; i += 8) {
            uint64_t w;
            memcpy(&w, buf + i, 8);
            if (w)
                return r + (uint64_t)i;
        }
        r += (uint64_t)k & ~(uint64_t)7;
    }
    return top;
}

/* Format 2's squeeze: chunk by chunk (each header says how much of it holds entries), the
 * unused ends are cut out. A chunk still in its place whose unused end is at most a 16th
 * of it stays as it is (a full chunk's last, too-small bit), so a single-threaded trace
 * moves nothing and only its last chunk shrinks. Anything that is not a chunk header stops
 * the walk; from there the rest is moved down as it is. */
bool tlsm_tmap_finish2(int fd, const char *end, size_t n)
{
    static char buf[64 * 1024];
    uint64_t top = atomic_load(&sh->next), r = TLSM_B2_FILE_HDR, w = r;
    struct stat st;
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_size < top)
        top = (uint64_t)st.st_size;
    while (r + TLSM_B2_CHUNK_HDR <= top) {
        unsigned char h[TLSM_B2_CHUNK_HDR];
        if (pread(fd, h, sizeof(h), (off_t)r) != (ssize_t)sizeof(h))
            return false;
        uint32_t size = le32(h + 4), used = le32(h + 8);
        if (le32(h) == 0 && le32(h + 4) == 0) {
            r = skip_zeros(fd, buf, sizeof(buf), r, top);
            continue;
        }
        if (le32(h) != TLSM_B2_CHUNK_MAGIC || size < TLSM_B2_CHUNK_HDR || size % 8 ||
            r + size > top || used > size - TLSM_B2_CHUNK_HDR)
            break;
        uint64_t keep = (TLSM_B2_CHUNK_HDR + (uint64_t)used + 7) / 8 * 8;
        if (w == r && size - keep <= size / 16) {
            r = w = r + size;
            continue;
        }
        if (w != r && !move_down(fd, buf, sizeof(buf), r, keep, w))
            return false;
        char sz[4] = {(char)keep, (char)(keep >> 8), (char)(keep >> 16), (char)(keep >> 24)};
        if (!pwrite_all(fd, sz, 4, w + 4))
            return false;
        /* Zero padding of the kept part: the bytes after the entries may be a cut copy's. */
        uint64_t pad = keep - TLSM_B2_CHUNK_HDR - used;
        if (pad && !pwrite_all(fd, "\0\0\0\0\0\0\0", pad, w + keep - pad))
            return false;
        r += size, w += keep;
    }
    if (r < top && r != w && !move_down(fd, buf, sizeof(buf), r, top - r, w))
        return false;
    w += r < top ? top - r : 0;
    bool ok = !n || pwrite_all(fd, end, n, w);
    atomic_store(&sh->next, w + (ok ? n : 0));
    atomic_store(&sh->first_gap, UINT64_MAX);
    return ftruncate(fd, (off_t)(w + (ok ? n : 0))) == 0 && ok;
}

bool tlsm_tmap_append(int fd, const char *line, size_t n)
{
    return sh && pwrite_all(fd, line, n, reserve(n, false));
}

void tlsm_tmap_detach(void)
{
    if (sh)
        munmap(sh, page);
    sh = NULL;
}
