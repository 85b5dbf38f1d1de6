/* caps.c: capability bits as OpenSSL sees them (per instance: a masked copy and an
 * unmasked one differ on the same CPU) and as the CPU offers them. */
#include "base/caps.h"
#include "arch/arch.h"

#include <elf.h>
#include <stdbool.h>
#include <sys/auxv.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bit {
    enum tlsm_cap cap; /* its name: common/schema.def */
    int word, bit;
};

/* ia32cap word 0 = CPUID.1 (EDX | ECX << 32); word 1 = CPUID.7 (EBX | ECX << 32). */
static const struct bit ia32_bits[] = {
    {TLSM_CAP_AESNI, 0, 57},
    {TLSM_CAP_PCLMULQDQ, 0, 33},
    {TLSM_CAP_SSSE3, 0, 41},
    {TLSM_CAP_AVX, 0, 60},
    {TLSM_CAP_AVX2, 1, 5},
    {TLSM_CAP_AVX512F, 1, 16},
    {TLSM_CAP_VAES, 1, 41},
    {TLSM_CAP_VPCLMULQDQ, 1, 42},
    {TLSM_CAP_SHA, 1, 29},
    /* ChaCha20/Poly1305 dispatch (chacha-x86_64.pl, poly1305-x86_64.pl) */
    {TLSM_CAP_AVX512VL, 1, 31},
    {TLSM_CAP_AVX512IFMA, 1, 21},
    {TLSM_CAP_XOP, 0, 43},
};

/* OPENSSL_armcap bits (crypto/arm_arch.h). */
static const struct bit arm_bits[] = {
    {TLSM_CAP_NEON, 0, 0},   {TLSM_CAP_AES, 0, 2},   {TLSM_CAP_SHA1, 0, 3},
    {TLSM_CAP_SHA256, 0, 4}, {TLSM_CAP_PMULL, 0, 5}, {TLSM_CAP_SHA512, 0, 6},
};

static struct tlsm_caps decode(const struct bit *b, size_t nb, const uint64_t w[2])
{
    struct tlsm_caps c = {0, 0};
    for (size_t i = 0; i < nb; i++) {
        c.known |= 1u << b[i].cap;
        if ((w[b[i].word] >> b[i].bit) & 1)
            c.set |= 1u << b[i].cap;
    }
    return c;
}

struct tlsm_caps tlsm_caps_decode(const char *cpuinfo)
{
    const char *p;
    uint64_t w[2] = {0, 0};
    if (!cpuinfo)
        return (struct tlsm_caps){0, 0};
    if ((p = strstr(cpuinfo, "OPENSSL_ia32cap=0x"))) {
        char *end;
        w[0] = strtoull(p + 16, &end, 16);
        if (end[0] == ':' && end[1] == '0' && end[2] == 'x')
            w[1] = strtoull(end + 1, NULL, 16);
        return decode(ia32_bits, sizeof(ia32_bits) / sizeof(ia32_bits[0]), w);
    }
    if ((p = strstr(cpuinfo, "OPENSSL_armcap=0x"))) {
        w[0] = strtoull(p + 15, NULL, 16);
        return decode(arm_bits, sizeof(arm_bits) / sizeof(arm_bits[0]), w);
    }
    return (struct tlsm_caps){0, 0};
}

/* In the schema's order, which is each architecture's table order. */
void tlsm_caps_write(struct tlsm_json *j, struct tlsm_caps c)
{
    tlsm_json_obj(j, "caps");
    for (int i = 0; i < TLSM_CAP_N; i++)
        if (c.known >> i & 1) {
            tlsm_json_key(j, tlsm_cap_name((enum tlsm_cap)i));
            tlsm_json_bool_k(j, TLSM_AFTER_KEY, c.set >> i & 1);
        }
    tlsm_json_obj_end(j);
}

struct bid_search {
    const struct link_map *lm;
    char *buf;
    size_t cap;
};

static void note_to_hex(const ElfW(Nhdr) * nh, char *buf, size_t cap)
{
    const unsigned char *d = (const unsigned char *)(nh + 1) + ((nh->n_namesz + 3) & ~3u);
    size_t n = 0;
    for (unsigned i = 0; i < nh->n_descsz && n + 3 <= cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%02x", d[i]);
}

static void scan_notes(const char *p, size_t sz, char *buf, size_t cap)
{
    const char *end = p + sz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
        const ElfW(Nhdr) *nh = (const void *)p;
        size_t len = sizeof(*nh) + ((nh->n_namesz + 3) & ~3u) + ((nh->n_descsz + 3) & ~3u);
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(nh + 1, "GNU", 4)) {
            note_to_hex(nh, buf, cap);
            return;
        }
        p += len;
    }
}

static int bid_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct bid_search *s = arg;
    if (info->dlpi_addr != s->lm->l_addr)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_NOTE)
            scan_notes((const char *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr),
                       info->dlpi_phdr[i].p_memsz, s->buf, s->cap);
    return 1;
}

void tlsm_build_id(const struct link_map *lm, char *buf, size_t cap)
{
    struct bid_search s = {lm, buf, cap};
    buf[0] = 0;
    dl_iterate_phdr(bid_cb, &s);
}

static int read_cpuinfo(char *buf, size_t cap)
{
    FILE *f = fopen("/proc/cpuinfo", "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    fclose(f);
    return 0;
}

/* Value of the first "key<spaces>: value" line, copied into out. */
static void field(const char *text, const char *key, char *out, size_t cap)
{
    const char *p = text;
    out[0] = 0;
    while ((p = strstr(p, key))) {
        if (p == text || p[-1] == '\n') {
            const char *c = strchr(p, ':'), *e;
            if (!c)
                return;
            c += 1 + (c[1] == ' ');
            e = strchr(c, '\n');
            snprintf(out, cap, "%.*s", (int)(e ? e - c : (long)strlen(c)), c);
            return;
        }
        p++;
    }
}

void tlsm_cpu_model(char *buf, size_t cap)
{
    static char text[16384];
    if (read_cpuinfo(text, sizeof(text)))
        return (void)snprintf(buf, cap, "unknown");
    field(text, "model name", buf, cap);
    if (!buf[0]) /* aarch64 kernels name the part only by number */
        field(text, "CPU part", buf, cap);
    if (!buf[0])
        snprintf(buf, cap, "unknown");
}

/* An x86 cpuinfo seen by an aarch64 process: it runs under qemu-user. */
bool tlsm_cpu_emulated(void)
{
    static char text[16384];
    char flags[64];
    if (!TLSM_ARCH_IS_ARM || read_cpuinfo(text, sizeof(text)))
        return false;
    field(text, "vendor_id", flags, sizeof(flags));
    return flags[0] != 0;
}

/* The architecture's hwcaps where they are the truth (arch/aarch64/cpu.c), else the flags
 * of /proc/cpuinfo. */
void tlsm_cpu_crypto_write(struct tlsm_json *j)
{
    static const char *const want[] = {"aes",  "pclmulqdq", "vaes",   "vpclmulqdq", "ssse3",
                                       "avx2", "avx512f",   "sha_ni", "pmull",      "sha1",
                                       "sha2", "sha3",      "sha512"};
    static char text[16384];
    char flags[4096];
    const char *hw[16];
    int nhw = tlsm_arch_crypto_hwcaps(hw, 16);
    tlsm_json_arr(j, "cpu_crypto");
    for (int i = 0; i < nhw; i++)
        tlsm_json_item_safe(j, hw[i]);
    if (nhw < 0 && !read_cpuinfo(text, sizeof(text))) {
        field(text, "flags", flags, sizeof(flags));
        if (!flags[0])
            field(text, "Features", flags, sizeof(flags));
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
            size_t l = strlen(want[i]);
            for (const char *p = flags; (p = strstr(p, want[i])); p += l)
                if ((p == flags || p[-1] == ' ') && (p[l] == ' ' || p[l] == 0)) {
                    tlsm_json_item_safe(j, want[i]);
                    break;
                }
        }
    }
    tlsm_json_arr_end(j);
}
