/* openmetrics.c: a set of series as the Prometheus text exposition (format 0.0.4: what
 * node_exporter's textfile collector reads and `promtool check metrics` checks), with the
 * exporter's own gauges: build, last update, the files read, the label values kept. */
#include "output/openmetrics.h"

#include <inttypes.h>
#include <string.h>

/* A label value or HELP text: backslash, newline and (label values only) the double quote
 * escaped, as the format wants. */
static void escaped(FILE *f, const char *s, bool quote)
{
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\\\", f);
        else if (*s == '\n')
            fputs("\\n", f);
        else if (quote && *s == '"')
            fputs("\\\"", f);
        else
            fputc(*s, f);
    }
}

static void family_head(FILE *f, const char *name, const char *help, const char *type)
{
    fprintf(f, "# HELP %s ", name);
    escaped(f, help, false);
    fprintf(f, "\n# TYPE %s %s\n", name, type);
}

static void series_line(FILE *f, const struct series *s)
{
    const struct metric_fam_def *d = &metric_fams[s->fam];

    fputs(d->name, f);
    for (int k = 0; k < METRIC_LABELS && d->labels[k]; k++) {
        fprintf(f, "%s%s=\"", k ? "," : "{", d->labels[k]);
        escaped(f, s->val[k], true);
        fputc('"', f);
    }
    if (d->labels[0])
        fputc('}', f);
    if (d->seconds) /* ns as exact decimal seconds */
        fprintf(f, " %" PRIu64 ".%09" PRIu64 "\n", s->v / 1000000000u, s->v % 1000000000u);
    else
        fprintf(f, " %" PRIu64 "\n", s->v);
}

static void gauge(FILE *f, const char *name, const char *help, const char *labels, double v)
{
    family_head(f, name, help, "gauge");
    fprintf(f, "%s%s %.17g\n", name, labels, v);
}

int openmetrics__write(FILE *f, const struct mset *ms, const struct om_info *info)
{
    size_t i = 0;

    for (int fam = 0; fam < MF_N; fam++) {
        if (i >= ms->n || ms->s[i].fam != fam)
            continue;
        family_head(f, metric_fams[fam].name, metric_fams[fam].help, "counter");
        for (; i < ms->n && ms->s[i].fam == fam; i++)
            series_line(f, &ms->s[i]);
    }
    family_head(f, "tlsmeter_build_info", "The tlsmeter-analyze that wrote these metrics.",
                "gauge");
    fprintf(f, "tlsmeter_build_info{version=\"%s\",trace_formats=\"1 2\"} 1\n", TLSM_VERSION);
    gauge(f, "tlsmeter_last_update_timestamp_seconds",
          "When these metrics were written (Unix time).", "", info->now);
    if (info->start > 0)
        gauge(f, "tlsmeter_counters_start_timestamp_seconds",
              "When the counters last started from zero (the state file was made).", "",
              info->start);
    family_head(f, "tlsmeter_trace_files",
                "Trace files read for this update: live (no end line yet) or ended.", "gauge");
    fprintf(f, "tlsmeter_trace_files{state=\"live\"} %d\n", info->live);
    fprintf(f, "tlsmeter_trace_files{state=\"ended\"} %d\n", info->ended);
    gauge(f, "tlsmeter_trace_files_unreadable",
          "Trace files that could not be read for this update (not counted; stderr names them).",
          "", info->unreadable);
    if (info->max_programs) {
        family_head(f, "tlsmeter_label_values",
                    "Distinct values kept for a label; past the limit new values count as "
                    "\"(other)\".",
                    "gauge");
        fprintf(f, "tlsmeter_label_values{label=\"program\"} %d\n", info->programs);
        fprintf(f, "tlsmeter_label_values{label=\"copy\"} %d\n", info->copies);
        family_head(f, "tlsmeter_label_values_limit", "The limit of tlsmeter_label_values.",
                    "gauge");
        fprintf(f, "tlsmeter_label_values_limit{label=\"program\"} %d\n", info->max_programs);
        fprintf(f, "tlsmeter_label_values_limit{label=\"copy\"} %d\n", info->max_copies);
    }
    return ferror(f) ? -1 : 0;
}
