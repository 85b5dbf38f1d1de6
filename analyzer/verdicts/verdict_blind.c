/* verdict_blind.c: what the trace could not see, so nobody trusts a number it does not
 * support: cut-short traces, drops, hooks that never fired, emulation, disagreements, reads
 * that bypassed the hooks (RTLD_DEEPBIND), other TLS libraries, bytes sent in no record seen. */
#include "verdicts/summary.h"

#include "base/fmt.h"

#include <stdio.h>
#include <string.h>

static void truncated(struct summary *s, const struct trace *t)
{
    char cut[96] = "";

    if (t->has_end && !t->partial_last && !t->lines_cut)
        return;
    if (t->lines_cut)
        snprintf(cut, sizeof(cut), "; %llu line%s cut by the process's death",
                 (unsigned long long)t->lines_cut, t->lines_cut == 1 ? "" : "s");
    summary__verdict(s, V_TRUNCATED, "blind",
                     "%s %s%s%s: it holds %llu reads, %llu records up to there; CPU time, "
                     "dropped events and unfired hooks are unknown for it",
                     t->file,
                     t->has_end ? "ends"
                                : "is cut short: no end line (process killed "
                                  "or still running)",
                     t->partial_last ? "; its last line is incomplete" : "", cut,
                     (unsigned long long)t->st.reads, (unsigned long long)t->st.recs);
}

/* tlsmeter's own warnings, from the trace: the program may have sent stderr elsewhere. */
static void warned(struct summary *s, const struct trace *t)
{
    if (t->warnings)
        summary__verdict(s, V_WARNINGS, "blind", "%s: tlsmeter warned %llu time%s: %s", t->file,
                         (unsigned long long)t->warnings, t->warnings == 1 ? "" : "s",
                         t->warn_first ? t->warn_first : "?");
}

/* Unfired hooks are normal (a program calls SSL_read_ex, never SSL_peek); they are a blind
 * spot only when they hide where AES-GCM bytes went. */
static void unfired(struct summary *s, const struct trace *t)
{
    const struct model *m = s->m;
    uint64_t native = 0;
    size_t i;

    /* Only the program's own AES-GCM records of its default provider: rerouted ones never
     * reach the GCM hooks, nor do those of another provider's module (the provider verdict
     * says how their code was named). */
    for (i = 0; i < m->nbuckets; i++) {
        const struct bucket *b = &m->buckets[i];

        /* Records whose impl event named their code (3.5's VAES kernel is read from the
         * provider's context, not through these hooks) are not blind. */
        if (b->impl && b->impl_ct >= b->impl_none_ct)
            continue;
        /* Nor are those of a copy whose layout is not verified: nothing of its code is read,
         * whatever fired, and its class verdict says so (speed band, "layout not verified"). */
        const struct lib *l = trace__bucket_lib(&m->traces[b->trace], b, model__name(m, b->path));
        if (l && l->gcm_layout && !strcmp(l->gcm_layout, "unverified"))
            continue;
        /* Nor are those of a copy reached past the linker (its provider tables or entry
         * points): its GCM functions are internal, these hooks could never fire there, and
         * its reach and class evidence already say what its class rests on. */
        if (l && l->reach && (strstr(l->reach, "table") || strstr(l->reach, "entry")))
            continue;
        if (&m->traces[b->trace] == t && !b->prov && !strcmp(model__name(m, b->path), "native") &&
            impl__is_aes_gcm(model__name(m, b->cipher)))
            native += b->st.rec_ct;
    }
    if (!trace__unfired(t, "CRYPTO_gcm128_decrypt") ||
        !trace__unfired(t, "CRYPTO_gcm128_decrypt_ctr32") || !native ||
        t->st.gcm_dec + t->st.gcm_ctr + t->st.gcm_both)
        return;
    summary__verdict(s, V_GCM_INVISIBLE, "blind",
                     "%s: the CRYPTO_gcm128_* hooks never fired, so which AES-GCM code path ran "
                     "is not visible (symbols hidden or not called through the PLT); the class "
                     "rests on the capability bits alone",
                     t->file);
}

/* The reasons in words, "; " between them. */
static void blind_words(const struct blind *b, char *buf, size_t cap)
{
    size_t n = 0;
    int r;

    buf[0] = 0;
    for (r = 0; r < BR_N && n < cap; r++)
        if (b->reasons & (1u << r))
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "; " : "",
                                  blind_reason__text((enum blind_reason)r));
    if (b->unknown && n < cap)
        snprintf(buf + n, cap - n, "%s%s (a reason this analyzer does not know)", n ? "; " : "",
                 b->unknown);
}

/* An object holding OpenSSL TLS code the hooks never saw: its records are missing, so the
 * report's zeros (or small totals) are not "no TLS here". */
static void blind_copy(struct summary *s, const struct trace *t, const struct blind *b)
{
    char why[640];
    struct verdict *v;

    blind_words(b, why, sizeof(why));
    v = summary__verdict(s, V_BLIND_COPY, "blind",
                         "%s: %s holds %s TLS code tlsmeter cannot see: %s. Its reads, records "
                         "and crypto time are not in this trace",
                         t->file, b->path ? b->path : "?",
                         b->version && *b->version ? b->version : "OpenSSL", why);
    if (b->record_relocs >= 0)
        verdict__evidence(v, "record_relocs", (double)b->record_relocs);
    if (b->got_tlsmeter >= 0)
        verdict__evidence(v, "got_tlsmeter", (double)b->got_tlsmeter);
    if (b->got_elsewhere >= 0)
        verdict__evidence(v, "got_elsewhere", (double)b->got_elsewhere);
    verdict__evidence(v, "reasons", (double)b->reasons);
}

/* Connections whose records the kernel decrypted (out: encrypted): the kTLS work is the
 * process's system CPU time, which no record event can show. */
static void ktls(struct summary *s, const struct trace *t, const struct blind *b, bool out)
{
    int64_t n = out ? b->send_conns : b->conns;
    struct verdict *v;

    if (n <= 0)
        return;
    v = summary__verdict(s, V_KTLS, "blind",
                         "%s: %lld connection%s of %s (%s) %s with kernel TLS (kTLS): %s moved "
                         "into the kernel (no EVP call reached tlsmeter); its cost is the "
                         "process's system CPU time, not in this trace. Their %s are in it; the "
                         "crypto figures above (and any verdict on them) cover only the records "
                         "libssl %s itself (%llu)",
                         t->file, (long long)n, n == 1 ? "" : "s", b->path ? b->path : "?",
                         b->version && *b->version ? b->version : "OpenSSL",
                         out ? "sent" : "received", out ? "encryption" : "decryption",
                         out ? "writes" : "reads", out ? "sealed" : "decrypted",
                         (unsigned long long)t->st.recs);
    verdict__evidence(v, "conns", (double)n);
}

/* Instances with kTLS connections in the direction out (receive when false). */
static int ktls_libs(const struct model *m, bool out)
{
    int n = 0;

    for (size_t i = 0; i < m->ntraces; i++)
        for (int k = 0; k < m->traces[i].nblind; k++) {
            const struct blind *b = &m->traces[i].blind[k];

            n += !strcmp(b->what, "ktls") && (out ? b->send_conns : b->conns) > 0;
        }
    return n;
}

static const char *base_name(const char *p)
{
    const char *b = p ? strrchr(p, '/') : NULL;

    return b ? b + 1 : p ? p : "?";
}

/* "libcurl.so.4 (needed by curl.so, loaded RTLD_DEEPBIND) calls SSL_read, ... past
 * tlsmeter's hooks, bound straight to libssl.so.3" for each "calls" entry, "; " between. */
static int calls_words(const struct trace *t, char *buf, size_t cap)
{
    size_t n = 0;
    int i, k = 0;

    buf[0] = 0;
    for (i = 0; i < t->nblind && n < cap; i++) {
        const struct blind *b = &t->blind[i];
        bool needed = b->needed_by && *b->needed_by, bound = b->bound_to && *b->bound_to;
        const char *how = b->scope && !strcmp(b->scope, "namespace")
                              ? "in another link-map namespace"
                              : "loaded RTLD_DEEPBIND";

        if (strcmp(b->what, "calls"))
            continue;
        n += (size_t)snprintf(
            buf + n, cap - n, "%s%s (%s%s%s%s) calls %s past tlsmeter's hooks%s%s", k++ ? "; " : "",
            base_name(b->path), needed ? "needed by " : "", needed ? base_name(b->needed_by) : "",
            needed ? ", " : "", how, b->fns ? b->fns : "SSL_read",
            bound ? ", bound straight to " : "", bound ? base_name(b->bound_to) : "");
    }
    return k;
}

/* A copy whose SSL_read is unreachable had its socket reads traced: the socket-reads verdict
 * says where its reads went, records without reads are its records. */
static bool socket_reads(const struct trace *t)
{
    return t->reach && t->reach->ncopies;
}

/* Objects whose SSL_* calls bind past the hooks (RTLD_DEEPBIND, dlmopen). With records
 * decrypted outside any traced read, that is where the reads went; without, the object
 * probably made no TLS connection. */
static void reads_bypassed(struct summary *s, const struct trace *t)
{
    char who[700];
    struct verdict *v;
    int k = calls_words(t, who, sizeof(who));

    if (k && t->recs_outside_reads)
        v = summary__verdict(
            s, V_READS_BYPASSED, "blind",
            "%s: records without reads: %s: bytes per read, read sizes and per-connection "
            "totals are missing for %llu application-data record%s decrypted outside any "
            "traced read; crypto time per record is still measured",
            t->file, who, (unsigned long long)t->recs_outside_reads,
            t->recs_outside_reads == 1 ? "" : "s");
    else if (k)
        v = summary__verdict(s, V_READS_BYPASSED, "info",
                             "%s: %s: if %s made TLS connections, their reads are not in this "
                             "trace (no record was decrypted outside a traced read, so probably "
                             "none)",
                             t->file, who, k == 1 ? "it" : "they");
    else if (t->recs_outside_reads >= 4 && !t->st.reads && !socket_reads(t)) /* older trace */
        v = summary__verdict(s, V_READS_BYPASSED, "blind",
                             "%s: records without reads: %llu application-data records were "
                             "decrypted outside any SSL_read tlsmeter saw (the caller's SSL_read "
                             "binds past the hooks: RTLD_DEEPBIND, another namespace, or a "
                             "static call): read sizes and per-connection totals are missing; "
                             "crypto time per record is still measured",
                             t->file, (unsigned long long)t->recs_outside_reads);
    else
        return;
    verdict__evidence(v, "records_outside_reads", (double)t->recs_outside_reads);
    verdict__evidence(v, "objects", (double)k);
}

/* Another TLS library did TLS here (its hooked calls were counted). */
static void other_tls(struct summary *s, const struct trace *t, const struct blind *b)
{
    char calls[64] = "";
    struct verdict *v;

    if (b->calls > 0)
        snprintf(calls, sizeof(calls), " (%lld calls of its handshake/read functions)",
                 (long long)b->calls);
    v = summary__verdict(s, V_OTHER_TLS, "blind",
                         "%s: %s (%s%s%s) does TLS in this process%s: tlsmeter measures OpenSSL "
                         "3 only, so its connections, reads, records and crypto time are not in "
                         "this trace",
                         t->file, b->path ? b->path : "?", b->library ? b->library : "?",
                         b->version && *b->version ? " " : "", b->version ? b->version : "", calls);
    if (b->calls >= 0)
        verdict__evidence(v, "calls", (double)b->calls);
}

/* Why events were dropped, from the end line: the file could not grow (io_error: disk
 * full, RLIMIT_FSIZE), a pipe or FIFO that did not keep up, or threads still writing while
 * the process exited. */
static void dropped(struct summary *s, const struct trace *t)
{
    char lost[64] = "", cause[224];
    struct verdict *v;
    struct fmtbuf fb;

    if (t->dropped <= 0)
        return;
    if (t->dropped_bytes > 0)
        snprintf(lost, sizeof(lost), " (%s of trace)", fmt_bytes(&fb, (uint64_t)t->dropped_bytes));
    if (t->io_error && strstr(t->io_error, "No space left"))
        snprintf(cause, sizeof(cause), "the trace's disk was full (%s)", t->io_error);
    else if (t->io_error && strstr(t->io_error, "File too large"))
        snprintf(cause, sizeof(cause), "the trace reached the file size limit (%s)", t->io_error);
    else if (t->io_error && strstr(t->io_error, "RLIMIT_AS"))
        snprintf(cause, sizeof(cause),
                 "tlsmeter stopped mapping trace space near the process's address space limit "
                 "(%s), so that the program's own mappings would not fail",
                 t->io_error);
    else if (t->io_error)
        snprintf(cause, sizeof(cause), "the trace file could not grow (%s)", t->io_error);
    else if (t->io && !strcmp(t->io, "mmap"))
        snprintf(cause, sizeof(cause), "threads still writing while the process exited");
    else
        snprintf(cause, sizeof(cause), "full trace buffers: a pipe or FIFO that did not keep up");
    v = summary__verdict(s, V_DROPPED, "blind",
                         "%s: %lld event%s%s %s dropped: %s; totals undercount", t->file,
                         (long long)t->dropped, t->dropped == 1 ? "" : "s", lost,
                         t->dropped == 1 ? "was" : "were", cause);
    verdict__evidence(v, "dropped", (double)t->dropped);
    if (t->dropped_bytes > 0)
        verdict__evidence(v, "dropped_bytes", (double)t->dropped_bytes);
}

/* A summary trace's own losses (docs/trace-format.md, summary): records of more (instance,
 * cipher, path, direction) buckets than the writer keeps, socket reads of more copies, and
 * threads past its live list still running at exit, whose reads and writes no snapshot
 * holds. */
static void summary_lost(struct summary *s, const struct trace *t)
{
    struct verdict *v;

    if (t->sum_lost_recs) {
        v = summary__verdict(s, V_DROPPED, "blind",
                             "%s: %llu record%s counted in no summary bucket (more than 8 "
                             "instance, cipher, path and direction keys); totals undercount",
                             t->file, (unsigned long long)t->sum_lost_recs,
                             t->sum_lost_recs == 1 ? "" : "s");
        verdict__evidence(v, "lost_recs", (double)t->sum_lost_recs);
    }
    if (t->sum_lost_sockreads) {
        v = summary__verdict(s, V_DROPPED, "blind",
                             "%s: %llu socket read%s of more than 8 copies past the hooks counted "
                             "in no summary part; their bytes are not in the totals",
                             t->file, (unsigned long long)t->sum_lost_sockreads,
                             t->sum_lost_sockreads == 1 ? "" : "s");
        verdict__evidence(v, "lost_sockreads", (double)t->sum_lost_sockreads);
    }
    if (t->sum_threads_unlisted > 0) {
        v = summary__verdict(s, V_DROPPED, "blind",
                             "%s: %lld thread%s running at exit beyond the 1,024 the summary "
                             "lists: %s reads and writes are in no snapshot; totals undercount",
                             t->file, (long long)t->sum_threads_unlisted,
                             t->sum_threads_unlisted == 1 ? "" : "s",
                             t->sum_threads_unlisted == 1 ? "its" : "their");
        verdict__evidence(v, "threads_unlisted", (double)t->sum_threads_unlisted);
    }
}

static void per_trace(struct summary *s, const struct trace *t)
{
    int i;

    for (i = 0; i < t->nblind; i++) {
        if (!strcmp(t->blind[i].what, "ktls"))
            ktls(s, t, &t->blind[i], false);
        else if (!strcmp(t->blind[i].what, "other_tls"))
            other_tls(s, t, &t->blind[i]);
        else if (strcmp(t->blind[i].what, "calls"))
            blind_copy(s, t, &t->blind[i]);
    }
    reads_bypassed(s, t);
    truncated(s, t);
    warned(s, t);
    dropped(s, t);
    summary_lost(s, t);
    if (t->quiet)
        summary__verdict(s, V_QUIET, "blind",
                         "%s: tlsmeter went quiet (%s): events after that point are missing",
                         t->file, t->quiet);
    unfired(s, t);
    if (t->emulated)
        summary__verdict(s, V_EMULATED, "blind",
                         "%s ran under emulation (%s on %s): times and ns/B are not the target "
                         "CPU's; the class comes from capability bits and GCM entries only",
                         t->file, t->arch ? t->arch : "?", t->cpu ? t->cpu : "?");
    if (t->reroute_reason && t->mode && strcmp(t->mode, "native"))
        summary__verdict(s, V_REROUTE_OFF, "blind",
                         "%s: TLSMETER_CRYPTO=%s was asked for but the reroute backend is off "
                         "(%s): every record ran on the program's own path",
                         t->file, t->mode, t->reroute_reason);
    if (t->reroute_fallback > 0)
        summary__verdict(s, V_REROUTE_FALLBACK, "blind",
                         "%s: %lld records fell back to the native path (%s)", t->file,
                         (long long)t->reroute_fallback,
                         t->reroute_reason ? t->reroute_reason : "reason not given");
}

static void mismatches(struct summary *s)
{
    const struct model *m = s->m;
    struct impl_result r;
    size_t i;

    for (i = 0; i < m->nbuckets; i++) {
        impl__classify(m, &m->buckets[i], &r);
        if (r.mismatch)
            summary__verdict(s, V_CLASS_MISMATCH, "blind",
                             "%s %s: the class from capability bits and GCM entries is %s (%s), "
                             "but %s",
                             m->traces[m->buckets[i].trace].file,
                             model__name(m, m->buckets[i].cipher), impl__name(r.cls), r.detail,
                             r.check);
    }
}

static bool cut_short(const struct model *m)
{
    for (size_t i = 0; i < m->ntraces; i++)
        if (!m->traces[i].has_end || m->traces[i].partial_last)
            return true;
    return false;
}

static void invisible_crypto(struct summary *s)
{
    const struct stats *st = &s->m->st;
    int copies = model__blind_count(s->m, "tls"), ktls_in = ktls_libs(s->m, false);
    int others = model__blind_count(s->m, "other_tls");
    struct verdict *v;
    struct fmtbuf a;

    if (!st->reads && !st->recs && cut_short(s->m)) {
        summary__verdict(s, V_NO_EVENTS, "blind",
                         "no SSL read and no record decryption in this trace, which is cut "
                         "short (see truncated): the process died before tlsmeter saw one");
    } else if (!st->reads && !st->recs) {
        v = summary__verdict(s, V_NO_EVENTS, "blind",
                             "no SSL read and no record decryption in this trace: the program "
                             "made no TLS reads through a hooked OpenSSL (hooks that never "
                             "fired are listed under input)");
        if (copies)
            snprintf(v->text + strlen(v->text), sizeof(v->text) - strlen(v->text),
                     "; this is not \"no TLS here\": %d object%s hold%s TLS code tlsmeter "
                     "cannot see (blind-copy)",
                     copies, copies == 1 ? "" : "s", copies == 1 ? "s" : "");
        if (others)
            snprintf(v->text + strlen(v->text), sizeof(v->text) - strlen(v->text),
                     "; this is not \"no TLS here\": %d other TLS librar%s did TLS (other-tls)",
                     others, others == 1 ? "y" : "ies");
    }
    if (st->got && !st->recs)
        summary__verdict(s, V_NO_RECORDS, "blind",
                         "reads returned %s but no record decryption was seen: %s; the crypto "
                         "cost is invisible here (hooks that never fired are listed under input)",
                         fmt_bytes(&a, st->got),
                         ktls_in  ? "kernel TLS decrypted them (ktls)"
                         : copies ? "the copy tlsmeter cannot see decrypted them (blind-copy)"
                                  : "kTLS, a statically linked or -Bsymbolic OpenSSL, or "
                                    "hidden symbols");
    if (st->tag_fail)
        summary__verdict(s, V_TAG_FAILURES, "blind",
                         "%llu record%s failed authentication (bad record MAC)",
                         (unsigned long long)st->tag_fail, st->tag_fail == 1 ? "" : "s");
    if (s->lines_skipped)
        summary__verdict(
            s, V_MALFORMED, "blind", "%llu malformed line%s skipped (see the warnings)",
            (unsigned long long)s->lines_skipped, s->lines_skipped == 1 ? " was" : "s were");
}

/* getrusage on a VM is often tick-based, and crypto_ns is wall time where the trace cannot
 * give on-CPU time: when crypto exceeds the process CPU (or wall time x threads), the shares
 * are clamped at 100 % (summary.c) and this says so, with the bound. */
static void cpu_undercount(struct summary *s)
{
    struct fmtbuf a, b, c;
    struct verdict *v;

    if (s->cpu_short_ns > 0) {
        v = summary__verdict(s, V_CPU_UNDERCOUNT, "blind",
                             "crypto >= 100 %% of the CPU the kernel accounted: process CPU "
                             "undercounted by at least %s (crypto %s, process CPU %s; crypto "
                             "time is %s): the CPU share is shown as 100 %%, treat it as a bound",
                             fmt_ns(&a, (double)s->cpu_short_ns), fmt_ns(&b, (double)s->crypto_ns),
                             fmt_ns(&c, (double)s->cpu_ns), s->cputime_text);
        verdict__evidence(v, "undercount_ns", (double)s->cpu_short_ns);
        verdict__evidence(v, "crypto_ns", (double)s->crypto_ns);
        verdict__evidence(v, "cpu_ns", (double)s->cpu_ns);
    }
    if (s->wall_short_ns > 0) {
        v = summary__verdict(s, V_CPU_UNDERCOUNT, "blind",
                             "crypto time (%s) exceeds wall time x %llu decrypting thread%s (%s) "
                             "by %s: the record times are off (crypto time is %s); the wall "
                             "share is shown as 100 %%",
                             fmt_ns(&a, (double)s->crypto_ns), (unsigned long long)s->nthreads_dec,
                             s->nthreads_dec == 1 ? "" : "s",
                             fmt_ns(&b, (double)s->wall_threads_ns),
                             fmt_ns(&c, (double)s->wall_short_ns), s->cputime_text);
        verdict__evidence(v, "over_wall_ns", (double)s->wall_short_ns);
    }
}

void verdicts_blind(struct summary *s)
{
    cpu_undercount(s);
    size_t i;

    for (i = 0; i < s->m->ntraces; i++)
        per_trace(s, &s->m->traces[i]);
    mismatches(s);
    invisible_crypto(s);
}

/* The sending side's twin of no-records: bytes SSL_write* returned that no sealed record
 * tlsmeter saw accounts for (at least written - plaintext of every record sealed, handshake
 * ones included). None sealed: the sending crypto is invisible; some: the figures above
 * cover only what was seen. Sets s->unsealed for the verdicts that follow. */
void verdicts_blind_out(struct summary *s)
{
    const struct stats *st = &s->m->st;
    int copies = model__blind_count(s->m, "tls"), ktls_out = ktls_libs(s->m, true);
    struct fmtbuf a, b;
    struct verdict *v;

    for (size_t i = 0; i < s->m->ntraces; i++)
        for (int k = 0; k < s->m->traces[i].nblind; k++)
            if (!strcmp(s->m->traces[i].blind[k].what, "ktls"))
                ktls(s, &s->m->traces[i], &s->m->traces[i].blind[k], true);
    s->unsealed = st->got > st->rec_pt ? st->got - st->rec_pt : 0;
    if (st->got && !st->recs_app) {
        v = summary__verdict(
            s, V_NO_RECORDS, "blind",
            "writes sent %s but no record encryption was seen: %s; the crypto cost of sending "
            "is invisible here, so no verdict is given on it",
            fmt_bytes(&a, st->got),
            ktls_out ? "kernel TLS encrypted them (ktls)"
            : copies ? "the copy tlsmeter cannot see sealed them (blind-copy)"
                     : "kernel TLS sending, a cipher tlsmeter does not follow (CBC, CCM), or an "
                       "OpenSSL copy whose encryption the hooks do not reach (statically linked, "
                       "-Bsymbolic, hidden symbols)");
    } else if (s->unsealed > UNSEALED_MIN && s->unsealed * 100 > st->got) {
        v = summary__verdict(s, V_NO_RECORDS, "blind",
                             "%s of the %s sent through SSL_write are in no record tlsmeter saw "
                             "sealed: the record, byte and crypto figures of the sending side "
                             "cover only the %llu records seen",
                             fmt_bytes(&a, s->unsealed), fmt_bytes(&b, st->got),
                             (unsigned long long)st->recs);
    } else {
        s->unsealed = 0; /* within what a cut-short last write may leave */
        return;
    }
    verdict__evidence(v, "written_bytes", (double)st->got);
    verdict__evidence(v, "sealed_pt_bytes", (double)st->rec_pt);
    verdict__evidence(v, "unsealed_bytes", (double)s->unsealed);
}

/* "the trace explains 0.08 ms (0.04 %) of the process's 214 ms of CPU": said first for a
 * process with TLS the trace could not measure, so that no figure below reads as the whole. */
static void unexplained(struct summary *s, uint32_t ti)
{
    const struct trace *t = &s->m->traces[ti];
    char name[512], tail[160] = "";
    uint64_t hs, ex = weights__explained_ns(s->m, ti, &hs);
    int64_t cpu = trace__cpu_ns(t);
    int n = weights__blind(s, t, name, sizeof(name));
    struct fmtbuf a, b, c, d, e, f;
    struct verdict *v;

    if (!n)
        return;
    if (n > 1)
        snprintf(tail, sizeof(tail), " and %d more blind spot%s (the blind verdicts below)", n - 1,
                 n == 2 ? "" : "s");
    if (cpu <= 0) {
        v = summary__verdict(s, V_CPU_UNEXPLAINED, "blind",
                             "%s: %s%s is not measured, and the process's CPU is "
                             "unknown (%s): how much of it the trace explains cannot be said; no "
                             "verdict here judges whether crypto is the bottleneck",
                             t->file, name, tail,
                             t->has_end ? "not in the end line" : "no end line");
        verdict__evidence(v, "explained_ns", (double)ex);
        return;
    }
    double sh = (double)ex / (double)cpu > 1 ? 1 : (double)ex / (double)cpu;
    v = summary__verdict(s, V_CPU_UNEXPLAINED, "blind",
                         "%s: the trace explains %s (%s) of the process's %s of CPU (record "
                         "crypto %s, handshakes %s); the other %s is not accounted for, and "
                         "%s%s, which the trace could not measure, is in it: no verdict "
                         "here judges whether crypto is the bottleneck",
                         t->file, fmt_ns(&a, (double)ex), fmt_pct(&b, sh), fmt_ns(&c, (double)cpu),
                         fmt_ns(&d, (double)(ex - hs)), fmt_ns(&e, (double)hs), fmt_pct(&f, 1 - sh),
                         name, tail);
    verdict__evidence(v, "explained_ns", (double)ex);
    verdict__evidence(v, "cpu_ns", (double)cpu);
    verdict__evidence(v, "share_explained", sh);
    verdict__evidence(v, "blind", (double)n);
}

void verdicts_unexplained(struct summary *s)
{
    if (s->out) /* the process's blind spots are said once, with the decrypting side */
        return;
    for (size_t i = 0; i < s->m->ntraces; i++)
        unexplained(s, (uint32_t)i);
}
