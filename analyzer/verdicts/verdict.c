/* verdict.c: one sentence per finding, each with the numbers behind it, and only when the
 * trace holds the evidence. References (what hardware or ChaCha20 would cost) come from the
 * trace itself: calib events or reroute records, never from constants here. */
#include "verdicts/summary.h"

#include "base/fmt.h"

#include <stdio.h>
#include <string.h>

struct ref {
    double nspb;
    const char *src;
};

/* What the summary's records went through: the words of its verdicts. */
static const char *noun(const struct summary *s)
{
    return s->out ? "encryption" : "decryption";
}

static bool row_is(const struct summary *s, const struct row *w, const char *path)
{
    return !strcmp(model__name(s->m, w->path), path);
}

/* Where the CPU-time denominator comes from: the process's CPU when the trace has it. The
 * share is of the on-CPU estimate and never above 1 (summary.c says what lies beyond). */
static double share(const struct summary *s, uint64_t ns, const char **of)
{
    double v;

    *of = s->share_cpu >= 0 ? "of CPU" : "of wall time";
    if (s->share_cpu >= 0)
        v = (double)ns / (double)s->cpu_ns;
    else
        v = s->wall_threads_ns > 0 ? (double)ns / (double)s->wall_threads_ns : 0;
    return v > 1 ? 1 : v;
}

/* A calibration measures bulk records (16 KiB); one of another size is not a bulk figure. */
static bool calib_ref(const struct summary *s, int cipher, bool chacha, struct ref *r)
{
    const struct model *m = s->m;
    size_t i;
    int k;

    for (i = 0; i < m->ntraces; i++)
        for (k = 0; k < m->traces[i].ncalibs; k++) {
            const struct calib *c = &m->traces[i].calibs[k];
            bool ok = chacha ? impl__is_chacha(model__name(m, c->cipher))
                             : c->cipher == cipher && !strcmp(c->impl, "hardware");

            if (ok && (!c->len || c->len >= SC_BULK_MIN)) {
                r->nspb = c->ns_per_byte;
                r->src = "calibration at start-up";
                return true;
            }
        }
    return false;
}

/* A measured reference: calibration first, then the bulk median of the reroute hw backend's
 * records (for hardware AES) or of ChaCha20 records (for the what-if). */
static bool find_ref(const struct summary *s, int cipher, bool chacha, struct ref *r)
{
    int i;

    if (calib_ref(s, cipher, chacha, r))
        return true;
    for (i = 0; i < s->nrows; i++) {
        const struct row *w = &s->rows[i];
        bool ok = chacha ? impl__is_chacha(model__name(s->m, w->cipher))
                         : w->cipher == cipher && row_is(s, w, "hw");

        if (ok && row__bulk_median(w) > 0) {
            r->nspb = row__bulk_median(w);
            r->src = chacha ? "bulk median of ChaCha20 records in this trace"
                            : "bulk median of reroute hw records";
            return true;
        }
    }
    return false;
}

static double row_nspb(const struct row *w)
{
    return w->st.rec_ct ? (double)w->crypto_ns / (double)w->st.rec_ct : 0;
}

/* "0.35 ns/B (bulk median)", or with too few bulk records what there is instead. */
static void cost_text(const struct row *w, char *buf, size_t n)
{
    if (row__bulk_median(w) >= 0)
        snprintf(buf, n, "%.2f ns/B (median of %llu bulk records)", row__bulk_median(w),
                 (unsigned long long)w->fig[SC_BULK].used);
    else
        snprintf(buf, n,
                 "%.2f ns/B over %llu records, %llu of them bulk (>= 2 KiB; %d make a bulk figure)",
                 row_nspb(w), (unsigned long long)w->st.recs,
                 (unsigned long long)w->fig[SC_BULK].used, BULK_MIN_RECORDS);
}

static void gain_evidence(struct verdict *v, const struct row *w)
{
    verdict__evidence(v, "ns_per_byte", row_nspb(w));
    verdict__evidence(v, "bulk_records", (double)w->fig[SC_BULK].used);
    if (row__bulk_median(w) >= 0)
        verdict__evidence(v, "bulk_ns_per_byte_median", row__bulk_median(w));
}

static void software_aes(struct summary *s, const struct row *w)
{
    const char *cipher = model__name(s->m, w->cipher), *of;
    double bulk = row__bulk_median(w), sh = share(s, w->crypto_ns, &of);
    uint64_t bulk_ns = w->fig[SC_BULK].crypto_ns;
    struct fmtbuf a, b, c, d;
    char cost[128];
    struct ref r;
    struct verdict *v;

    cost_text(w, cost, sizeof(cost));
    if (bulk < 0) {
        v = summary__verdict(s, V_SOFTWARE_AES, "problem",
                             "%s %s is not all in hardware (%s): %s, %s %s; no gain figure: "
                             "fewer than %d bulk records, and smaller records' ns/B is fixed "
                             "per-record work, not the cipher",
                             cipher, noun(s), w->detail, cost, fmt_pct(&a, sh), of,
                             BULK_MIN_RECORDS);
    } else if (!find_ref(s, w->cipher, false, &r)) {
        v = summary__verdict(
            s, V_SOFTWARE_AES, "problem",
            "%s %s is not all in hardware (%s): %s, %s %s; the expected gain cannot "
            "be computed from this trace: record again with TLSMETER_CALIBRATE=1 (measures the "
            "hardware path once at start-up) or run `tlsmeter ab` (reroutes to hardware)",
            cipher, noun(s), w->detail, cost, fmt_pct(&a, sh), of);
    } else {
        double gain = bulk / r.nspb;

        v = summary__verdict(s, V_SOFTWARE_AES, "problem",
                             "%s %s is not all in hardware (%s): %s, %s %s; hardware "
                             "AES on this CPU does %.2f ns/B (%s); expected gain ~%s on bulk "
                             "records, their crypto %s -> %s",
                             cipher, noun(s), w->detail, cost, fmt_pct(&a, sh), of, r.nspb, r.src,
                             fmt_ratio(&b, gain), fmt_ns(&c, (double)bulk_ns),
                             fmt_ns(&d, (double)bulk_ns / gain));
        verdict__evidence(v, "hw_ns_per_byte", r.nspb);
        verdict__evidence(v, "expected_gain", gain);
    }
    if (s->emulated)
        snprintf(v->text + strlen(v->text), sizeof(v->text) - strlen(v->text),
                 " (ns/B measured under emulation: not the target CPU's)");
    gain_evidence(v, w);
    verdict__evidence(v, "crypto_ns", (double)w->crypto_ns);
    verdict__evidence(v, s->share_cpu >= 0 ? "share_cpu" : "share_wall", sh);
}

static void chacha_what_if(struct summary *s, const struct row *w)
{
    double bulk = row__bulk_median(w);
    uint64_t bulk_ns = w->fig[SC_BULK].crypto_ns;
    struct fmtbuf a, b, c;
    struct ref r;
    struct verdict *v;

    if (bulk < 0)
        return; /* no bulk figure to compare with: software_aes said why */
    if (!find_ref(s, -1, true, &r)) {
        summary__verdict(s, V_CHACHA_WHAT_IF, "info",
                         "ChaCha20-Poly1305 (the fast cipher without AES instructions; TLS 1.3 "
                         "suite TLS_CHACHA20_POLY1305_SHA256) is not measured in this trace: "
                         "record with TLSMETER_CALIBRATE=1 to see what it would cost here");
        return;
    }
    v = summary__verdict(s, V_CHACHA_WHAT_IF, "info",
                         "ChaCha20-Poly1305 would cost %.2f ns/B here (%s): %s less than this "
                         "software AES on bulk records (%.2f ns/B median), their crypto %s -> "
                         "%s, by negotiating TLS_CHACHA20_POLY1305_SHA256 (no library rebuild)",
                         r.nspb, r.src, fmt_ratio(&a, bulk / r.nspb), bulk,
                         fmt_ns(&b, (double)bulk_ns), fmt_ns(&c, (double)bulk_ns * r.nspb / bulk));
    verdict__evidence(v, "chacha_ns_per_byte", r.nspb);
    verdict__evidence(v, "gain", bulk / r.nspb);
}

/* What the copy's "platform: TARGET" build text says about its assembler modules: "" when it
 * has none (an older trace, a copy that keeps no such text). */
static const char *platform_says(const char *platform, char *buf, size_t cap)
{
    /* OpenSSL's Linux Configure targets with AES/GHASH assembler modules, and the generic ones
     * without (Configurations/10-main.conf). */
    static const char *const asm_targets[] = {
        "linux-x86_64",  "linux-x86_64-clang", "linux-elf",       "linux-x86",
        "linux-aarch64", "linux-armv4",        "linux64-aarch64", "linux-ppc64le",
        "linux-ppc64",   "linux64-s390x",      "linux64-mips64",  "linux-x32"};
    const char *t = platform && !strncmp(platform, "platform: ", 10) ? platform + 10 : NULL;
    if (!t || !*t)
        return "";
    if (!strncmp(t, "linux-generic", 13)) {
        snprintf(buf, cap, "; its build names the target %s, which has no assembler modules", t);
        return buf;
    }
    for (size_t i = 0; i < sizeof(asm_targets) / sizeof(asm_targets[0]); i++)
        if (!strcmp(t, asm_targets[i])) {
            snprintf(buf, cap,
                     "; its build names the target %s, which has them: it was "
                     "configured no-asm",
                     t);
            return buf;
        }
    snprintf(buf, cap,
             "; its build names the platform \"%s\", which is not one of OpenSSL's "
             "Configure targets: a target of the vendor's own, which names no "
             "assembler modules, so none were built",
             t);
    return buf;
}

/* Once per copy whose impl event names OpenSSL's C code for AES and GHASH (no GHASH pointer
 * beside a table block: model/impl.c), after the first software verdict: the rebuild to ask for. */
static void no_asm(struct summary *s)
{
    char why[256];
    for (size_t i = 0; i < s->m->ntraces; i++) {
        const struct trace *t = &s->m->traces[i];
        for (int k = 0; k < t->nimpls; k++) {
            const struct impl_ev *e = &t->impls[k];
            const struct lib *l = trace__lib(t, e->lib);
            bool again = false;
            if (strcmp(e->aes, tlsm_aes_name(TLSM_AES_TABLE_C)))
                continue;
            for (int j = 0; j < k; j++)
                again |= t->impls[j].lib == e->lib && !strcmp(t->impls[j].aes, e->aes);
            if (!again)
                summary__verdict(s, V_NO_ASM, "problem",
                                 "AES and GHASH in C: this OpenSSL was built without its "
                                 "assembler modules (%s, %s): its GCM context holds no GHASH "
                                 "function and a table AES_encrypt%s; built with them (a "
                                 "Configure target such as linux-x86_64 or linux-aarch64, "
                                 "without the no-asm option) it uses the CPU's AES and "
                                 "carry-less multiply instructions where the CPU has them",
                                 l && l->path ? l->path : "unknown copy",
                                 l && l->version ? l->version : "version unknown",
                                 platform_says(l ? l->platform : NULL, why, sizeof(why)));
        }
    }
}

/* "crypto is not the bottleneck" is said of the process, never of one part of it: only when
 * all of its record crypto is a small share and all of its TLS was measured. */
static bool crypto_is_small(const struct summary *s)
{
    const char *of;

    return share(s, s->crypto_ns, &of) < 0.05 && !s->unsealed && !s->blind;
}

static void hardware_aes(struct summary *s, const struct row *w)
{
    const char *of;
    double sh = share(s, w->crypto_ns, &of);
    struct fmtbuf a;
    char cost[128];
    struct verdict *v;

    cost_text(w, cost, sizeof(cost));
    v = summary__verdict(
        s, V_HARDWARE_AES, "info", "%s %s uses hardware AES (%s): %s, %s %s%s",
        model__name(s->m, w->cipher), noun(s), w->detail, cost, fmt_pct(&a, sh), of,
        crypto_is_small(s) ? ": crypto is not the bottleneck; look at reads and records"
        : s->unsealed      ? " of the records seen (not all of them: no-records)"
        : s->blind         ? " of the records seen; TLS the trace could not measure is not in "
                             "it (cpu-unexplained)"
                           : "");
    gain_evidence(v, w);
    verdict__evidence(v, s->share_cpu >= 0 ? "share_cpu" : "share_wall", sh);
}

/* Records decrypted by the reroute backend: the A/B measurement itself. */
static void reroute(struct summary *s, const struct row *w)
{
    struct fmtbuf a;
    char cost[128];
    struct verdict *v;

    cost_text(w, cost, sizeof(cost));
    v = summary__verdict(s, V_REROUTE, "info",
                         "%llu %s records were %s by the reroute backend (path %s, %s): "
                         "%s, crypto %s; compare with a native run of the same %s "
                         "(--compare NATIVE.jsonl THIS.jsonl) for the gain",
                         (unsigned long long)w->st.recs, model__name(s->m, w->cipher),
                         s->out ? "encrypted" : "decrypted", model__name(s->m, w->path),
                         impl__name(w->cls), cost, fmt_ns(&a, (double)w->crypto_ns),
                         s->out ? "transfer" : "download");
    verdict__evidence(v, "records", (double)w->st.recs);
    gain_evidence(v, w);
}

/* One verdict to give: a row, or the software or hardware part of a mixed one. */
struct crypto_item {
    struct row part;
    const struct row *row; /* the whole row, for its split */
    enum { CI_REROUTE, CI_SOFTWARE, CI_HARDWARE } kind;
};

/* "; software for 99.6 % of the bytes (...), in libvendor.so; hardware for 0.4 % ..." after a
 * verdict on one part of a mixed row. */
static void split_suffix(struct verdict *v, const struct row *w)
{
    size_t n = strlen(v->text);

    if (!w->mixed || n + 16 >= sizeof(v->text))
        return;
    n += (size_t)snprintf(v->text + n, sizeof(v->text) - n, "; this cipher's records: ");
    if (n + 1 < sizeof(v->text))
        wsplit__text(&w->split, v->text + n, sizeof(v->text) - n);
}

static int items_of(struct summary *s, struct crypto_item *it, int max)
{
    int i, n = 0;

    for (i = 0; i < s->nrows && n + 2 <= max; i++) {
        const struct row *w = &s->rows[i];

        if (row_is(s, w, "hw") || row_is(s, w, "soft")) {
            it[n].part = *w, it[n].row = w, it[n++].kind = CI_REROUTE;
            continue;
        }
        if (!row_is(s, w, "native") || !impl__is_aes_gcm(model__name(s->m, w->cipher)))
            continue;
        if (w->split.g[WG_SOFTWARE].bytes ||
            (!w->split.bytes && wgroup_of(w->cls) == WG_SOFTWARE)) {
            it[n].row = w, it[n].kind = CI_SOFTWARE;
            summary__row_part(s, w, WG_SOFTWARE, &it[n++].part);
        }
        if (w->split.g[WG_HARDWARE].bytes || (!w->split.bytes && w->cls == IMPL_HARDWARE)) {
            it[n].row = w, it[n].kind = CI_HARDWARE;
            summary__row_part(s, w, WG_HARDWARE, &it[n++].part);
        }
    }
    return n;
}

/* The headline is where the CPU went: the verdicts on records, most crypto time first (a
 * stable order for equal times: the rows' own). */
static void sort_items(struct crypto_item *it, int n)
{
    static struct crypto_item tmp;

    for (int i = 1; i < n; i++) {
        int k = i;

        tmp = it[i];
        for (; k > 0 && it[k - 1].part.crypto_ns < tmp.part.crypto_ns; k--)
            it[k] = it[k - 1];
        it[k] = tmp;
    }
}

static void crypto_verdicts(struct summary *s)
{
    static struct crypto_item it[2 * MAX_ROWS];
    int i, n = items_of(s, it, 2 * MAX_ROWS);
    bool soft = false;

    sort_items(it, n);
    for (i = 0; i < n; i++) {
        const struct row *w = &it[i].part;
        int before = s->nv;

        if (it[i].kind == CI_REROUTE) {
            reroute(s, w);
            continue;
        }
        if (it[i].kind == CI_SOFTWARE)
            software_aes(s, w);
        else
            hardware_aes(s, w);
        if (s->nv > before)
            split_suffix(&s->v[before], it[i].row);
        if (it[i].kind == CI_SOFTWARE && !soft)
            no_asm(s), chacha_what_if(s, w);
        soft |= it[i].kind == CI_SOFTWARE;
    }
}

void verdicts__build(struct summary *s)
{
    if (s->out) /* first: bytes sent in no record seen, before any verdict on the records */
        verdicts_blind_out(s);
    verdicts_unexplained(s); /* TLS the trace could not measure: before any verdict on crypto */
    verdicts_prov(s);        /* who decrypted, when not the default provider */
    crypto_verdicts(s);
    if (s->out) {          /* the read-side and blind-spot verdicts are the decrypting summary's */
        verdicts_reach(s); /* but records sealed outside any traced write are this side's */
        return;
    }
    verdicts_io(s);
    verdicts_hs(s);
    verdicts_blind(s);
    verdicts_reach(s);
}
