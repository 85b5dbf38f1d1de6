/* marks.c: one pass over each loaded object's string constants for the two strings tlsmeter
 * identifies OpenSSL by (marks.h), kept per object. This pass was the largest part of what
 * tlsmeter costs a process once: curl loads 30 libraries with 3.9 MB of constants. */
#include "forward/marks.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static const char ssl_mark[] = "ssl/record/rec_layer_s3.c";
static const char prov_mark[] = "AES-128-GCM:id-aes128-GCM:2.16.840.1.101.3.4.1.6";
#define SSL_LEN  (sizeof(ssl_mark) - 1)
#define PROV_LEN sizeof(prov_mark) /* with its NUL: the whole string */
/* Both are looked for in a window of the shorter one's length (the longer by its start). */
#define WIN SSL_LEN

static bool read_only(const ElfW(Phdr) * ph)
{
    return ph->p_type == PT_LOAD && (ph->p_flags & PF_R) && !(ph->p_flags & PF_W);
}

static bool read_only_data(const ElfW(Phdr) * ph)
{
    return read_only(ph) && !(ph->p_flags & PF_X);
}

/* Only the first kind of each layout (marks.h) holds them: the code (half of the bytes or
 * more) and the headers never hold a string constant. */
bool tlsm_marks_holds_strings(const struct dl_phdr_info *info, const ElfW(Phdr) * ph)
{
    const ElfW(Phdr) *code = NULL;
    bool after = false, data = false;
    if (!read_only(ph))
        return false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *q = &info->dlpi_phdr[i];
        if (read_only(q) && (q->p_flags & PF_X) && !code)
            code = q;
        data |= read_only_data(q);
        after |= read_only_data(q) && code && q->p_vaddr > code->p_vaddr;
    }
    if (ph->p_flags & PF_X)
        return !data;
    return !after || (code && ph->p_vaddr > code->p_vaddr);
}

/* The bytes of a string-holding segment worth searching: up to the unwind tables
 * (PT_GNU_EH_FRAME: .eh_frame_hdr, then .eh_frame and .gcc_except_table follow .rodata in
 * the same segment, a third of its bytes and never a string constant). */
static size_t string_bytes(const struct dl_phdr_info *info, const ElfW(Phdr) * ph)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *q = &info->dlpi_phdr[i];
        if (q->p_type == PT_GNU_EH_FRAME && q->p_vaddr > ph->p_vaddr &&
            q->p_vaddr < ph->p_vaddr + ph->p_filesz)
            return (size_t)(q->p_vaddr - ph->p_vaddr);
    }
    return ph->p_filesz;
}

/* Horspool over byte pairs for both strings at once: a window whose last two bytes are no
 * pair of either string's first WIN bytes moves on by WIN - 1 (libc's memmem hashes pairs
 * into 256 slots, and in string-dense data most pairs collide with one of a needle's). One
 * 16-bit load per step; the table is keyed the same way, so byte order does not matter.
 * Built once; a caller that finds it being built scans with memmem instead. */
static uint8_t shift[1 << 16];
static _Atomic int built; /* 0 no, 1 being built, 2 ready */

static void put_pairs(const char *s)
{
    for (size_t j = 0; j + 1 < WIN; j++) {
        uint16_t pair;
        memcpy(&pair, s + j, 2);
        if (shift[pair] > WIN - 2 - j)
            shift[pair] = (uint8_t)(WIN - 2 - j);
    }
}

/* Eight bytes a store: libc's memset of 64 KiB is a `rep stosb`, one instruction per byte
 * under callgrind, in every process. Kept a loop (GCC would turn it back into memset). */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static void fill_default(void)
{
    uint64_t v = 0x0101010101010101ull * (WIN - 1);
    for (size_t i = 0; i < sizeof(shift); i += 8)
        memcpy(shift + i, &v, 8);
}

static bool table_ready(void)
{
    int expect = 0;
    if (atomic_load_explicit(&built, memory_order_acquire) == 2)
        return true;
    if (!atomic_compare_exchange_strong(&built, &expect, 1))
        return false;
    fill_default();
    put_pairs(ssl_mark);
    put_pairs(prov_mark);
    atomic_store_explicit(&built, 2, memory_order_release);
    return true;
}

/* The scan reads other objects' string constants as raw bytes. Under AddressSanitizer an
 * instrumented object (a test plugin) has poisoned redzones between its globals: the scan
 * must not be checked (no_sanitize) and must not go through the sanitizer's memmem/memcmp. */
#define RAW_READ __attribute__((no_sanitize("address")))

RAW_READ static bool raw_eq(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

RAW_READ static const char *raw_find(const char *lo, size_t n, const char *s, size_t len)
{
    for (size_t i = 0; len && i + len <= n; i++)
        if (lo[i] == s[0] && raw_eq(lo + i, s, len))
            return lo + i;
    return NULL;
}

RAW_READ static bool prov_at(const char *lo, const char *end, const char *w)
{
    return end - w >= (ptrdiff_t)PROV_LEN && (w == lo || !w[-1]) && raw_eq(w, prov_mark, PROV_LEN);
}

RAW_READ static void slow_scan(const char *lo, size_t n, struct tlsm_marks *m)
{
    const char *end = lo + n;
    m->ssl = m->ssl || raw_find(lo, n, ssl_mark, SSL_LEN);
    for (const char *q = lo;
         !m->provider && q < end && (q = raw_find(q, (size_t)(end - q), prov_mark, PROV_LEN)); q++)
        m->provider = prov_at(lo, end, q);
}

/* A window whose last pair has shift 0 is checked for both strings. */
RAW_READ static void check_window(const char *lo, const char *end, const char *q,
                                  struct tlsm_marks *m)
{
    const char *w = q - (WIN - 2);
    if (!m->ssl && raw_eq(w, ssl_mark, SSL_LEN))
        m->ssl = true;
    if (!m->provider && prov_at(lo, end, w))
        m->provider = true;
}

void tlsm_marks_scan(const char *lo, size_t n, struct tlsm_marks *m);
RAW_READ void tlsm_marks_scan(const char *lo, size_t n, struct tlsm_marks *m)
{
    if (n < 8 * WIN)
        return n < WIN ? (void)0 : slow_scan(lo, n, m);
    if (!table_ready()) {
        slow_scan(lo, n, m);
        return;
    }
    const char *end = lo + n, *q = lo + WIN - 2, *last = end - 2, *safe = last - 7 * (WIN - 1);
    uint16_t pair;
    uint8_t s;
#define STEP() (pair = (uint16_t)((uint8_t)q[0] | (uint8_t)q[1] << 8), s = shift[pair], q += s)
    /* Eight steps between bound checks: a shift of 0 leaves q where it is, so the next steps
     * stay there and the last one still sees 0. */
    while (q <= safe) {
        STEP(), STEP(), STEP(), STEP(), STEP(), STEP(), STEP(), STEP();
        if (s)
            continue;
        check_window(lo, end, q, m);
        if (m->ssl && m->provider)
            return;
        q++;
    }
    while (q <= last) {
        STEP();
        if (s)
            continue;
        check_window(lo, end, q, m);
        if (m->ssl && m->provider)
            return;
        q++;
    }
#undef STEP
}

/* Kept per object: its load address, program headers and a hash of its name and headers
 * (an object loaded where a closed one was gets other headers or another name). */
#define MAX_KEPT 256
static struct kept {
    uintptr_t addr;
    const void *phdr;
    uint64_t hash;
    struct tlsm_marks m;
} kept[MAX_KEPT];
static _Atomic int nkept;
static _Atomic int busy; /* one writer; a caller that finds it taken does not keep its answer */

static uint64_t mix(uint64_t h, uint64_t v)
{
    return (h ^ v) * 0x9e3779b97f4a7c15ull;
}

/* Its name, program headers and notes (the build id): a rebuilt library has another. */
static uint64_t object_hash(const struct dl_phdr_info *info)
{
    uint64_t h = 0xcbf29ce484222325ull, v;
    for (const char *p = info->dlpi_name ? info->dlpi_name : ""; *p; p++)
        h = mix(h, (unsigned char)*p);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        h = mix(mix(mix(h, ph->p_type), ph->p_vaddr), ph->p_memsz);
        if (ph->p_type != PT_NOTE)
            continue;
        const char *note = (const char *)(info->dlpi_addr + ph->p_vaddr);
        for (size_t k = 0; k + 8 <= ph->p_filesz && k < 256; k += 8)
            h = mix(h, (memcpy(&v, note + k, 8), v));
    }
    return h;
}

static const struct kept *lookup(const struct dl_phdr_info *info, uint64_t hash)
{
    int n = atomic_load_explicit(&nkept, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (kept[i].addr == info->dlpi_addr && kept[i].phdr == info->dlpi_phdr &&
            kept[i].hash == hash)
            return &kept[i];
    return NULL;
}

struct tlsm_marks tlsm_marks_of(const struct dl_phdr_info *info)
{
    struct tlsm_marks m = {false, false};
    uint64_t hash = object_hash(info);
    const struct kept *k = lookup(info, hash);
    if (k)
        return k->m;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (tlsm_marks_holds_strings(info, ph))
            tlsm_marks_scan((const char *)(info->dlpi_addr + ph->p_vaddr), string_bytes(info, ph),
                            &m);
    }
    if (atomic_exchange_explicit(&busy, 1, memory_order_acquire))
        return m;
    int n = atomic_load_explicit(&nkept, memory_order_relaxed);
    if (n < MAX_KEPT && !lookup(info, hash)) {
        kept[n] = (struct kept){info->dlpi_addr, info->dlpi_phdr, hash, m};
        atomic_store_explicit(&nkept, n + 1, memory_order_release);
    }
    atomic_store_explicit(&busy, 0, memory_order_release);
    return m;
}
