/* fuzz_reader.c: libFuzzer target for the trace reader and everything behind it (model,
 * classification, verdicts, every output format, --jsonl), for both trace formats (format 2:
 * seeds f2-* in the corpus), plus a differential check: a line the fast scanner accepts must
 * be accepted by jansson with the same fields. */
#include "model/event.h"
#include "input/reader.h"
#include "output/report.h"
#include "input/scan.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;

static void same_event(const struct event *a, const struct event *b)
{
    int k;

    if (a->kind != b->kind || a->have_i != b->have_i || a->have_s != b->have_s ||
        a->have_tag_ok != b->have_tag_ok || (a->have_tag_ok && a->tag_ok != b->tag_ok))
        abort();
    for (k = 0; k < I_N; k++)
        if ((a->have_i & (1ull << k)) && a->i[k] != b->i[k])
            abort();
    for (k = 0; k < S_N; k++)
        if ((a->have_s & (1u << k)) &&
            (a->s[k].n != b->s[k].n || memcmp(a->s[k].p, b->s[k].p, a->s[k].n)))
            abort();
}

/* The scanner may decline anything, but what it accepts jansson must read the same way. */
static void differential(const char *p, size_t n)
{
    struct event fast = {0}, slow;
    json_error_t je;
    json_t *o;
    char err[128];

    if (scan__line(p, n, &fast))
        return;
    o = json_loadb(p, n, 0, &je);
    if (!o || !json_is_object(o) || event__from_json(&slow, o, err, sizeof(err)))
        abort();
    same_event(&fast, &slow);
    json_decref(o);
}

static void outputs(struct model *m)
{
    static struct summary s;
    struct profile p;

    stacks__finish(&m->stacks);
    profile__build(&p, m, NULL, false, NULL); /* no files opened: frames as module+0xoffset */
    summary__build(&s, m);
    s.prof = &p;
    report_text(devnull, &s, true);
    report_json(devnull, &s);
    report_compare_text(devnull, &s, &s);
    report_folded(devnull, &p, false);
    report_folded(devnull, &p, true);
    report_flamegraph(devnull, &p, false, "fuzz");
    profile__free(&p);
}

/* Both streaming outputs see every event the reader accepts. */
struct streams {
    struct chrome *ch;
    struct perfetto *pf;
};

static void both(void *ctx, const struct model *m, const struct trace *t, const struct event *e,
                 uint64_t oncpu_ns)
{
    struct streams *st = ctx;

    chrome__event(st->ch, m, t, e, oncpu_ns);
    perfetto__event(st->pf, m, t, e, oncpu_ns);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size, *nl;
    static struct model m;
    struct streams st;

    if (!devnull)
        devnull = fopen("/dev/null", "w");
    for (; p < end; p = nl + 1) {
        nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            nl = end;
        differential(p, (size_t)(nl - p));
    }
    model__init(&m);
    st.ch = chrome__open(devnull);
    st.pf = perfetto__open(devnull);
    m.hook = both;
    m.hook_ctx = &st;
    if (reader__buffer(&m, "fuzz", (const char *)data, size, NULL) == RD_OK)
        outputs(&m);
    chrome__close(st.ch);
    perfetto__close(st.pf);
    model__free(&m);
    /* --jsonl: every event printed as format 1 (format 2's records rendered as text). */
    model__init(&m);
    reader__jsonl = devnull;
    reader__buffer(&m, "fuzz", (const char *)data, size, NULL);
    reader__jsonl = NULL;
    model__free(&m);
    return 0;
}
