/* main.c: tlsmeter-analyze: options, reading every trace once, and the chosen output. */
#include "input/reader.h"
#include "output/openmetrics.h"
#include "output/report.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum exit_code {
    EXIT_OK = 0,
    EXIT_IO = 1,
    EXIT_USAGE = 2,
    EXIT_NO_EVENTS = 3,
    EXIT_BAD_INPUT = 4,
    EXIT_GATE = 5, /* --require-hw rejected the input */
};

enum output { OUT_TEXT, OUT_JSON, OUT_FOLDED, OUT_CHROME, OUT_JSONL, OUT_METRICS };

struct env {
    enum output output;
    bool compare, quiet, by_bytes;
    bool verbose; /* the text report's every section, histogram and table */
    bool out; /* --direction out: --folded, --flamegraph and --chrome show the encrypting side */
    const char *outfile, *flamegraph, *sysroot, *perfetto;
    struct gate gate;        /* --require-hw[=PCT], --allow-unknown, --allow-blind */
    struct fleet_opts fleet; /* --openmetrics */
    char **files_a, **files_b;
    int na, nb;
};

static const char usage_text[] =
    "usage: tlsmeter-analyze [options] TRACE...\n"
    "       tlsmeter-analyze --compare A B            (or: --compare A... --vs B...)\n"
    "Reads tlsmeter traces (the binary format tlsmeter writes by default, or JSON Lines;\n"
    "'-' for stdin) in one pass and reports where the CPU went when TLS data was decrypted\n"
    "and encrypted. Several traces merge into one (fleet) view.\n"
    "\n"
    "  (default)          text report: the answer first, then the details that say something\n"
    "  -v, --verbose      the text report with every section, histogram and table\n"
    "  -j, --json         one JSON summary object (for scripts and CI gates)\n"
    "  -f, --folded       folded call stacks weighted by crypto ns (flamegraph.pl, speedscope)\n"
    "  -F, --flamegraph SVG  also write an SVG flame graph weighted by crypto ns\n"
    "  -w, --weight ns|bytes  weight of --folded and --flamegraph (default ns)\n"
    "  -d, --direction in|out  records --folded, --flamegraph and --chrome show: decrypted\n"
    "                     (in, default) or encrypted (out); text and --json show both\n"
    "  -s, --sysroot DIR  symbolize stacks from DIR/PATH (a copy of the device's files)\n"
    "  -c, --chrome       Chrome Trace Event JSON (Perfetto, chrome://tracing)\n"
    "      --jsonl        the trace as format-1 JSON Lines (one object per event; reads\n"
    "                     formats 1 and 2): for jq, DuckDB read_json, ClickHouse JSONEachRow\n"
    "      --openmetrics  Prometheus counters (text exposition) of the traces; TRACE may be\n"
    "                     a directory of traces (docs/fleet.md)\n"
    "      --textfile DIR with --openmetrics: write DIR/tlsmeter.prom atomically for\n"
    "                     node_exporter, counters kept monotonic across processes in a\n"
    "                     state file (--state FILE, default DIR/.tlsmeter-metrics.state)\n"
    "      --every SECONDS  with --textfile: update every SECONDS until stopped\n"
    "      --prune SECONDS  with --textfile: delete traces that ended SECONDS ago or more,\n"
    "                     once counted (their counts stay)\n"
    "      --max-programs N, --max-copies N  label values kept (64, 32); more: \"(other)\"\n"
    "  -P, --perfetto FILE  also write the timeline as a Perfetto protobuf trace\n"
    "                     (ui.perfetto.dev; streams, for traces too large for --chrome)\n"
    "  -C, --compare      two traces or groups side by side (text, or JSON with --json)\n"
    "      --vs           in --compare: the traces after it form group B\n"
    "      --require-hw[=PCT]  CI gate (text or --json): exit 5 when more than PCT % (default\n"
    "                     0) of the decrypted bytes ran in software, or any in code tlsmeter\n"
    "                     could not name (unknown), or the process did TLS the trace could\n"
    "                     not measure (a blind copy, another TLS library, kernel TLS, socket\n"
    "                     bytes in no record); the answer goes to stderr and the report\n"
    "      --allow-unknown    with --require-hw: accept bytes of unknown code\n"
    "      --allow-blind      with --require-hw: accept TLS the trace could not measure\n"
    "  -o, --output FILE  write to FILE instead of stdout\n"
    "  -q, --quiet        no warnings about malformed lines\n"
    "  -V, --version      print the version\n"
    "  -h, --help         this help\n"
    "\n"
    "Exit status:\n"
    "  0  report written\n"
    "  1  a file could not be read or the output not written\n"
    "  2  usage error (also: a --sysroot that is not a directory)\n"
    "  3  no rec or read event in any input (the report is still written, naming any\n"
    "     TLS code tlsmeter could not see)\n"
    "  4  an input is not a tlsmeter trace, or has a newer format version\n"
    "  5  --require-hw rejected the input (instead of 0 or 3; the report is written)\n";

static const struct option long_opts[] = {
    {"json", no_argument, NULL, 'j'},
    {"folded", no_argument, NULL, 'f'},
    {"chrome", no_argument, NULL, 'c'},
    {"perfetto", required_argument, NULL, 'P'},
    {"compare", no_argument, NULL, 'C'},
    {"output", required_argument, NULL, 'o'},
    {"quiet", no_argument, NULL, 'q'},
    {"version", no_argument, NULL, 'V'},
    {"help", no_argument, NULL, 'h'},
    {"vs", no_argument, NULL, 'X'},
    {"verbose", no_argument, NULL, 'v'},
    {"flamegraph", required_argument, NULL, 'F'},
    {"weight", required_argument, NULL, 'w'},
    {"sysroot", required_argument, NULL, 's'},
    {"direction", required_argument, NULL, 'd'},
    {"jsonl", no_argument, NULL, 'J'},
    {"require-hw", optional_argument, NULL, 'R'},
    {"allow-unknown", no_argument, NULL, 'U'},
    {"allow-blind", no_argument, NULL, 'B'},
    {"openmetrics", no_argument, NULL, 'O'},
    {"textfile", required_argument, NULL, 'T'},
    {"state", required_argument, NULL, 'S'},
    {"every", required_argument, NULL, 'E'},
    {"max-programs", required_argument, NULL, 'M'},
    {"max-copies", required_argument, NULL, 'N'},
    {"prune", required_argument, NULL, 'W'},
    {NULL, 0, NULL, 0},
};

static bool takes_value(const char *a)
{
    static const char *const with_value[] = {
        "-o",         "--output",  "-F",      "--flamegraph",   "-w",           "--weight",
        "-s",         "--sysroot", "-P",      "--perfetto",     "-d",           "--direction",
        "--textfile", "--state",   "--every", "--max-programs", "--max-copies", "--prune"};
    size_t i;

    for (i = 0; i < sizeof(with_value) / sizeof(with_value[0]); i++)
        if (!strcmp(a, with_value[i]))
            return true;
    return false;
}

/* How many operands come before "--vs": getopt permutes argv, so count them first. */
static int operands_before_vs(int argc, char **argv)
{
    int i, n = 0;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--vs"))
            return n;
        if (!strcmp(argv[i], "--"))
            break;
        if (takes_value(argv[i]))
            i++;
        else if (argv[i][0] != '-' || !strcmp(argv[i], "-"))
            n++;
    }
    return -1;
}

/* A usage error: one line that says what was wrong (main adds where the help is). Returns -2. */
__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
    va_list ap;

    fputs("tlsmeter-analyze: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return -2;
}

/* --require-hw=PCT: the share of decrypted bytes allowed in software, 0 to 100. */
static int parse_gate(struct env *env, const char *arg)
{
    char *end;
    double v;

    env->gate.on = true;
    env->gate.pct = 0;
    if (!arg)
        return 0;
    errno = 0;
    v = strtod(arg, &end);
    if (!*arg || *end || errno || !(v >= 0 && v <= 100))
        return usage_error("--require-hw=%s: PCT must be a number from 0 to 100 (the share of "
                           "the decrypted bytes allowed in software, in percent)",
                           arg);
    env->gate.pct = v;
    return 0;
}

static int parse_opt(struct env *env, int c)
{
    switch (c) {
    case 'R':
        return parse_gate(env, optarg);
    case 'U':
        env->gate.allow_unknown = true;
        return 0;
    case 'B':
        env->gate.allow_blind = true;
        return 0;
    case 'j':
        env->output = OUT_JSON;
        return 0;
    case 'f':
        env->output = OUT_FOLDED;
        return 0;
    case 'c':
        env->output = OUT_CHROME;
        return 0;
    case 'J':
        env->output = OUT_JSONL;
        return 0;
    case 'O':
        env->output = OUT_METRICS;
        return 0;
    case 'T':
    case 'S':
    case 'E':
    case 'M':
    case 'N':
    case 'W':
        return fleet__opt(&env->fleet, c, optarg);
    case 'C':
        env->compare = true;
        return 0;
    case 'o':
        env->outfile = optarg;
        return 0;
    case 'q':
        env->quiet = true;
        return 0;
    case 'F':
        env->flamegraph = optarg;
        return 0;
    case 's':
        env->sysroot = optarg;
        return 0;
    case 'P':
        env->perfetto = optarg;
        return 0;
    case 'w':
        env->by_bytes = !strcmp(optarg, "bytes");
        if (!env->by_bytes && strcmp(optarg, "ns"))
            return usage_error("--weight takes ns or bytes, not '%s'", optarg);
        return 0;
    case 'd':
        env->out = !strcmp(optarg, "out");
        if (!env->out && strcmp(optarg, "in"))
            return usage_error("--direction takes in or out, not '%s'", optarg);
        return 0;
    case 'X': /* --vs: counted by operands_before_vs */
        return 0;
    case 'v':
        env->verbose = true;
        return 0;
    case 'V':
        printf("tlsmeter-analyze %s (trace formats 1 and 2)\n", TLSM_VERSION);
        exit(EXIT_OK);
    case 'h':
        fputs(usage_text, stdout);
        exit(EXIT_OK);
    default: /* getopt said what was wrong, under the name parse_args gave it */
        return -2;
    }
}

static int split_groups(struct env *env, int nops, char **ops, int before_vs)
{
    env->files_a = ops;
    env->na = nops;
    if (!env->compare)
        return before_vs >= 0 ? usage_error("--vs goes with --compare (it starts group B)") : 0;
    if (before_vs < 0) {
        if (nops != 2)
            return usage_error("--compare needs two traces, or groups split by --vs (got %d "
                               "trace%s)",
                               nops, nops == 1 ? "" : "s");
        before_vs = 1;
    }
    if (env->flamegraph)
        return usage_error("--flamegraph draws one trace or fleet, not a --compare");
    env->na = before_vs;
    env->files_b = ops + before_vs;
    env->nb = nops - before_vs;
    if (!env->na || !env->nb)
        return usage_error("--compare A... --vs B...: %s --vs has no trace",
                           env->na ? "the group after" : "the group before");
    if (env->output != OUT_TEXT && env->output != OUT_JSON)
        return usage_error("--compare writes the text report or --json only");
    return 0;
}

/* The gate judges one report: text or --json of one group. */
static int gate_usage(const struct env *env)
{
    const char *why = NULL;

    if (!env->gate.on && (env->gate.allow_unknown || env->gate.allow_blind))
        why = "--allow-unknown and --allow-blind go with --require-hw";
    else if (env->gate.on && env->compare)
        why = "--require-hw judges one trace or fleet, not a --compare";
    else if (env->gate.on && env->output != OUT_TEXT && env->output != OUT_JSON)
        why = "--require-hw goes with the text report or --json";
    if (why)
        fprintf(stderr, "tlsmeter-analyze: %s\n", why);
    return why ? -2 : 0;
}

static int parse_args(struct env *env, int argc, char **argv)
{
    int before_vs = operands_before_vs(argc, argv), c, rc;

    argv[0] = (char *)"tlsmeter-analyze"; /* getopt's own messages begin with it */
    while ((c = getopt_long(argc, argv, "jfcCo:qvVhF:w:s:P:d:", long_opts, NULL)) != -1)
        if ((rc = parse_opt(env, c)))
            return rc;
    if (gate_usage(env) ||
        fleet__usage(&env->fleet, env->output == OUT_METRICS,
                     env->compare || env->flamegraph || env->perfetto || env->gate.on))
        return -2;
    if (optind >= argc)
        return usage_error("no trace given (a file, or '-' for stdin)");
    if (env->flamegraph && (env->output == OUT_CHROME || env->output == OUT_JSONL))
        return usage_error("--flamegraph goes with the text report, --json or --folded, not %s",
                           env->output == OUT_CHROME ? "--chrome" : "--jsonl");
    if (env->perfetto && (env->output == OUT_CHROME || env->output == OUT_JSONL || env->compare))
        return usage_error("--perfetto goes with the text report, --json or --folded of one trace "
                           "or fleet, not %s",
                           env->compare                ? "--compare"
                           : env->output == OUT_CHROME ? "--chrome"
                                                       : "--jsonl");
    return split_groups(env, argc - optind, argv + optind, before_vs);
}

/* Reads every file of a group into m; returns an exit code. */
static int read_group(struct model *m, char **files, int n, FILE *warn)
{
    int i, rc = EXIT_OK;

    for (i = 0; i < n; i++) {
        switch (reader__file(m, files[i], warn)) {
        case RD_OK:
            break;
        case RD_EMPTY:
            fprintf(stderr, "%s: no trace content (empty, or cut short before its header)\n",
                    files[i]);
            break;
        case RD_IO:
            return EXIT_IO;
        case RD_NOT_TRACE:
        case RD_NEWER:
            return EXIT_BAD_INPUT;
        }
    }
    if (!m->st.recs && !m->st.reads && !m->other_dir && !reader__jsonl) {
        fprintf(stderr, "tlsmeter-analyze: no rec or read event in the input%s\n",
                model__blind_count(m, NULL) ? " (the report names TLS tlsmeter could not see)"
                                            : "");
        rc = EXIT_NO_EVENTS;
    }
    return rc;
}

static bool any_header(const struct model *m)
{
    size_t i;

    for (i = 0; i < m->ntraces; i++)
        if (m->traces[i].format)
            return true;
    return false;
}

static int write_flamegraph(const struct env *env, const struct model *m, const struct profile *p)
{
    FILE *f = fopen(env->flamegraph, "w");
    char title[300];
    int rc;

    if (!f) {
        fprintf(stderr, "%s: %s\n", env->flamegraph, strerror(errno));
        return -1;
    }
    if (m->ntraces == 1)
        snprintf(title, sizeof(title), "tlsmeter: who is decrypting: %s (pid %lld)",
                 trace_name(&m->traces[0]), (long long)m->traces[0].pid);
    else
        snprintf(title, sizeof(title), "tlsmeter: who is decrypting: %zu traces", m->ntraces);
    rc = report_flamegraph(f, p, env->by_bytes, title);
    if (fclose(f))
        rc = -1;
    if (rc)
        fprintf(stderr, "%s: cannot write the flame graph\n", env->flamegraph);
    return rc;
}

/* The encrypting side's model and summary beside the decrypting one (text, --json, --compare):
 * the input read again with the model taking the other direction, only when the first pass
 * saw events of it (traces without encryption cost nothing). Warnings were said once. */
static int read_encrypt(struct model *mo, struct summary *so, char **files, int n)
{
    model__init(mo);
    mo->out = true;
    int rc = read_group(mo, files, n, NULL);
    if (rc == EXIT_OK) {
        stacks__finish(&mo->stacks);
        summary__build(so, mo);
    } else {
        model__free(mo);
    }
    return rc;
}

/* --require-hw: the answer on stderr (a CI log shows it whatever -o says) and in the report. */
static void judge(const struct env *env, struct summary *s, bool *rejected)
{
    static struct gate_result r;

    if (!env->gate.on)
        return;
    gate__eval(&env->gate, s, &r);
    s->gate = &r;
    *rejected = !r.passed;
    fprintf(stderr, "tlsmeter-analyze: require-hw: %s\n", r.why);
}

static int write_single(const struct env *env, struct model *m, FILE *out, FILE *warn,
                        bool *rejected)
{
    static struct summary s, so;
    static struct model mo;
    bool enc = false;
    struct profile p, po;
    int rc = 0;

    if (!any_header(m))
        return 0; /* nothing but empty files: the exit status says it */
    stacks__finish(&m->stacks);
    profile__build(&p, m, env->sysroot, true, warn);
    if ((env->output == OUT_FOLDED || env->flamegraph) && !p.any_stacks && warn)
        fprintf(warn, "tlsmeter-analyze: no stack events in the input: one frame per "
                      "connection (record with TLSMETER_STACKS=N for call stacks)\n");
    if (env->flamegraph && write_flamegraph(env, m, &p))
        rc = -1;
    if (env->output == OUT_FOLDED) {
        report_folded(out, &p, env->by_bytes);
    } else {
        summary__build(&s, m);
        judge(env, &s, rejected);
        s.prof = &p;
        if (!m->out && m->other_dir)
            enc = read_encrypt(&mo, &so, env->files_a, env->na) == EXIT_OK;
        s.enc = enc ? &so : NULL;
        if (enc) { /* who is encrypting: the write stacks, symbolized as the read ones */
            profile__build(&po, &mo, env->sysroot, true, NULL);
            so.prof = &po;
        }
        if (env->output == OUT_JSON)
            rc |= report_json(out, &s);
        else
            report_text(out, &s, env->verbose);
    }
    profile__free(&p);
    if (enc) {
        profile__free(&po);
        model__free(&mo);
    }
    return rc;
}

static int run_compare(const struct env *env, FILE *out, FILE *warn)
{
    static struct model a, b, ao, bo;
    static struct summary sa, sb, sao, sbo;
    int ra, rb, rc = 0;
    bool ea = false, eb = false;

    model__init(&a);
    model__init(&b);
    ra = read_group(&a, env->files_a, env->na, warn);
    rb = ra == EXIT_OK || ra == EXIT_NO_EVENTS ? read_group(&b, env->files_b, env->nb, warn) : ra;
    if ((ra == EXIT_OK || ra == EXIT_NO_EVENTS) && (rb == EXIT_OK || rb == EXIT_NO_EVENTS)) {
        summary__build(&sa, &a);
        summary__build(&sb, &b);
        if (a.other_dir || b.other_dir) { /* both sides of both groups: A/B per direction */
            ea = read_encrypt(&ao, &sao, env->files_a, env->na) == EXIT_OK;
            eb = read_encrypt(&bo, &sbo, env->files_b, env->nb) == EXIT_OK;
        }
        sa.enc = ea && eb ? &sao : NULL;
        sb.enc = ea && eb ? &sbo : NULL;
        if (env->output == OUT_JSON)
            rc = report_compare_json(out, &sa, &sb);
        else
            report_compare_text(out, &sa, &sb);
    }
    model__free(&a);
    model__free(&b);
    if (ea)
        model__free(&ao);
    if (eb)
        model__free(&bo);
    if (ra != EXIT_OK)
        return ra;
    return rb != EXIT_OK ? rb : rc ? EXIT_IO : EXIT_OK;
}

/* --perfetto FILE: the timeline written while reading, beside the report. */
static int perfetto_done(struct perfetto *pf, FILE *f, const char *path)
{
    int rc = perfetto__close(pf);

    if (fclose(f) || rc) {
        fprintf(stderr, "tlsmeter-analyze: --perfetto %s: cannot write the file\n", path);
        return -1;
    }
    return 0;
}

static int run_single(const struct env *env, FILE *out, FILE *warn)
{
    static struct model m;
    struct chrome *ch = NULL;
    struct perfetto *pf = NULL;
    FILE *pff = NULL;
    int rc, wrc = 0;
    bool rejected = false;

    model__init(&m);
    m.out = env->out;
    if (env->output == OUT_JSONL)
        reader__jsonl = out;
    if (env->output == OUT_CHROME) {
        ch = chrome__open(out);
        m.hook = chrome__event;
        m.hook_ctx = ch;
    } else if (env->perfetto) {
        if (!(pff = fopen(env->perfetto, "wb"))) {
            fprintf(stderr, "tlsmeter-analyze: --perfetto %s: %s\n", env->perfetto,
                    strerror(errno));
            return EXIT_IO;
        }
        pf = perfetto__open(pff);
        m.hook = perfetto__event;
        m.hook_ctx = pf;
    }
    rc = read_group(&m, env->files_a, env->na, warn);
    if ((ch || pf || env->output == OUT_FOLDED || env->flamegraph) && model__has_summary(&m))
        fprintf(warn,
                "tlsmeter-analyze: a summary trace (TLSMETER_EVENTS=summary) holds totals "
                "and histograms, no per-record or per-read events: %s needs an event "
                "trace (TLSMETER_EVENTS=all)\n",
                ch                ? "--chrome"
                : pf              ? "--perfetto"
                : env->flamegraph ? "--flamegraph"
                                  : "--folded");
    if (pf && perfetto_done(pf, pff, env->perfetto) && rc == EXIT_OK)
        rc = EXIT_IO;
    if (ch)
        wrc = chrome__close(ch);
    else if (reader__jsonl)
        wrc = 0;
    else if (rc == EXIT_OK || rc == EXIT_NO_EVENTS)
        wrc = write_single(env, &m, out, warn, &rejected);
    model__free(&m);
    if (wrc && rc == EXIT_OK)
        return EXIT_IO;
    return rejected && (rc == EXIT_OK || rc == EXIT_NO_EVENTS) ? EXIT_GATE : rc;
}

static bool is_dir(const char *path)
{
    struct stat st;

    return !stat(path, &st) && S_ISDIR(st.st_mode);
}

int main(int argc, char **argv)
{
    struct env env = {.output = OUT_TEXT};
    FILE *out = stdout, *warn;
    int rc;

    rc = parse_args(&env, argc, argv);
    if (!rc && env.sysroot && !is_dir(env.sysroot))
        rc = usage_error("--sysroot %s: not a directory", env.sysroot);
    if (rc) { /* said in one line; the whole help would bury it */
        fputs("Try 'tlsmeter-analyze --help'.\n", stderr);
        return EXIT_USAGE;
    }
    if (env.outfile && !(out = fopen(env.outfile, "w"))) {
        perror(env.outfile);
        return EXIT_IO;
    }
    warn = env.quiet ? NULL : stderr;
    if (env.output == OUT_METRICS)
        rc = fleet__run(&env.fleet, env.files_a, env.na, out, warn);
    else
        rc = env.compare ? run_compare(&env, out, warn) : run_single(&env, out, warn);
    if (fflush(out) || ferror(out) || (out != stdout && fclose(out))) {
        fprintf(stderr, "tlsmeter-analyze: cannot write the output\n");
        return EXIT_IO;
    }
    return rc;
}
