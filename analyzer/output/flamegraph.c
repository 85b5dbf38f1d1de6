/* flamegraph.c: a self-contained SVG flame graph (no script, no external font or style), since
 * Debian packages no folded-stack renderer. The call paths are merged into a tree; each frame is
 * a rectangle as wide as its share of the weight, callers below callees, with a hover title
 * giving the weight and the share. Frames under 0.1 pixel are left out of the picture only. */
#include "output/report.h"

#include "base/utf8.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

#define FG_WIDTH  1200.0
#define FG_PAD    10.0
#define FG_FRAME  17.0
#define FG_TOP    48.0
#define FG_CHAR_W 7.0 /* 12 px monospace */

struct node {
    int name;
    uint32_t child, sibling; /* 0: none (node 0 is the root, never a child) */
    uint32_t last;           /* last child: appending is O(1) with 2M siblings */
    uint64_t w;
};

struct fg {
    const struct profile *p;
    FILE *out;
    struct node *n;
    size_t nn, cap;
    struct imap map; /* (parent, name) -> node */
    uint64_t total;
    int depth;
    bool bytes;
};

static uint32_t child_of(struct fg *g, uint32_t parent, int name)
{
    long i = imap__get(&g->map, parent, (uint64_t)name);
    struct node *c;

    if (i >= 0)
        return (uint32_t)i;
    grow_array((void **)&g->n, &g->cap, g->nn, sizeof(*g->n));
    c = &g->n[g->nn];
    c->name = name;
    c->child = c->sibling = c->last = 0;
    c->w = 0;
    /* Appended at the end of the parent's list, so frames keep the order they first came
     * (the lookup is the hash map; the list is only for drawing). */
    if (!g->n[parent].child)
        g->n[parent].child = (uint32_t)g->nn;
    else
        g->n[g->n[parent].last].sibling = (uint32_t)g->nn;
    g->n[parent].last = (uint32_t)g->nn;
    imap__put(&g->map, parent, (uint64_t)name, (uint32_t)g->nn);
    return (uint32_t)g->nn++;
}

static void build_tree(struct fg *g)
{
    const struct profile *p = g->p;
    size_t i;
    uint32_t k, cur;

    grow_array((void **)&g->n, &g->cap, 0, sizeof(*g->n));
    g->n[0].name = -1;
    g->nn = 1;
    for (i = 0; i < p->ne; i++) {
        uint64_t w = g->bytes ? p->e[i].bytes : p->e[i].ns;

        if (!w)
            continue;
        g->n[0].w += w;
        for (cur = 0, k = 0; k < p->e[i].n; k++) {
            cur = child_of(g, cur, (int)p->frames[p->e[i].first + k]);
            g->n[cur].w += w;
        }
        if ((int)p->e[i].n > g->depth)
            g->depth = (int)p->e[i].n;
    }
    g->total = g->n[0].w;
}

/* At most max characters of s as XML 1.0 text: markup escaped, whole UTF-8 characters only
 * (a byte cut would make the file not well-formed: xmllint and browsers refuse it whole),
 * and what XML forbids (C0 controls, U+FFFE, U+FFFF, bytes that are not UTF-8) replaced by
 * a space or U+FFFD. */
static void xml_text(FILE *out, const char *s, size_t max)
{
    size_t n = strlen(s), i = 0, k, chars;
    uint32_t cp;

    for (chars = 0; i < n && chars < max; chars++, i += k ? k : 1) {
        k = utf8_char(s + i, n - i, &cp);
        if (!k || cp == 0xfffe || cp == 0xffff) {
            fputs("\xef\xbf\xbd", out); /* U+FFFD */
            continue;
        }
        switch (cp) {
        case '&':
            fputs("&amp;", out);
            break;
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        default:
            if (cp < 0x20)
                fputc(' ', out);
            else
                fwrite(s + i, 1, k, out);
        }
    }
}

static uint32_t hash_until(const char *s, const char *stop)
{
    uint32_t h = 2166136261u;

    for (; *s && !strchr(stop, *s); s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Warm colours; the library (text before '!' or '+') picks the hue, the function varies it. */
static void colour(const char *name, int depth, char *out, size_t cap)
{
    uint32_t lib = hash_until(name, "!+"), fn = hash_until(name, "");

    if (!depth) {
        snprintf(out, cap, "rgb(190,190,200)");
        return;
    }
    snprintf(out, cap, "rgb(%u,%u,%u)", 205 + lib % 50, 60 + (lib / 50 + fn % 40) % 170,
             (fn / 40) % 55);
}

static void frame_title(struct fg *g, const char *name, uint64_t w)
{
    fputs("<title>", g->out);
    xml_text(g->out, name, 4096);
    fprintf(g->out, " (%llu %s, %.2f %%)</title>", (unsigned long long)w, g->bytes ? "bytes" : "ns",
            g->total ? 100.0 * (double)w / (double)g->total : 0.0);
}

static void draw(struct fg *g, uint32_t k, double x, int depth)
{
    const struct node *nd = &g->n[k];
    const char *name = nd->name < 0 ? "all" : profile__name(g->p, nd->name);
    double w = (FG_WIDTH - 2 * FG_PAD) * (double)nd->w / (double)g->total;
    double y = FG_TOP + (double)(g->depth - depth) * FG_FRAME;
    size_t chars;
    char fill[32];
    uint32_t c;

    if (!(w >= 0.1))
        return;
    if (w > FG_WIDTH - 2 * FG_PAD) /* only when a hostile trace's weights wrapped around */
        w = FG_WIDTH - 2 * FG_PAD;
    chars = (size_t)(w / FG_CHAR_W);
    colour(name, depth, fill, sizeof(fill));
    fputs("<g>", g->out);
    frame_title(g, name, nd->w);
    fprintf(g->out,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" rx=\"2\"/>", x,
            y, w, FG_FRAME - 1, fill);
    if (chars >= 3) {
        size_t len = utf8_count(name);

        fprintf(g->out, "<text x=\"%.1f\" y=\"%.1f\">", x + 3, y + FG_FRAME - 5);
        xml_text(g->out, name, len > chars ? chars - 2 : chars);
        fputs(len > chars ? "..</text>" : "</text>", g->out);
    }
    fputs("</g>\n", g->out);
    for (c = nd->child; c; c = g->n[c].sibling) {
        draw(g, c, x, depth + 1);
        x += (FG_WIDTH - 2 * FG_PAD) * (double)g->n[c].w / (double)g->total;
    }
}

static void header(struct fg *g, const char *title, double height)
{
    fprintf(g->out,
            "<?xml version=\"1.0\" standalone=\"no\"?>\n"
            "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
            "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n"
            "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f0\"/>\n"
            "<g font-family=\"monospace\" font-size=\"12\" fill=\"#000\">\n"
            "<text x=\"%.0f\" y=\"22\" font-size=\"16\">",
            FG_WIDTH, height, FG_WIDTH, height, FG_PAD);
    xml_text(g->out, title, 200);
    fprintf(g->out,
            "</text>\n<text x=\"%.0f\" y=\"38\">width: share of %s (%llu); hover a frame for "
            "its numbers</text>\n",
            FG_PAD, g->bytes ? "bytes decrypted" : "crypto ns", (unsigned long long)g->total);
}

int report_flamegraph(FILE *out, const struct profile *p, bool bytes, const char *title)
{
    struct fg g = {.p = p, .out = out, .bytes = bytes};
    double height;

    build_tree(&g);
    height = FG_TOP + (double)(g.depth + 1) * FG_FRAME + FG_PAD;
    header(&g, title, height);
    if (g.total)
        draw(&g, 0, FG_PAD, 0);
    else
        fprintf(out, "<text x=\"%.0f\" y=\"%.0f\">no crypto weight in the trace</text>\n", FG_PAD,
                FG_TOP + 14);
    fputs("</g>\n</svg>\n", out);
    free(g.n);
    imap__free(&g.map);
    return ferror(out) ? -1 : 0;
}
