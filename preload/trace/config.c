/* config.c: one table of TLSMETER_* variables feeds parsing, the trace header and --help. */
#include "trace/config.h"
#include "trace/cputime.h"
#include "base/json.h"
#include "trace/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

struct tlsm_config tlsm_cfg = {
    .out = "tlsmeter.%p.jsonl",
    .reads = true,
    .records = true,
    .crypto = TLSM_MODE_NATIVE,
    .interval = 10,
};

enum opt_type { OPT_BOOL, OPT_UINT, OPT_STRING, OPT_MODE, OPT_CHOICE };

struct opt {
    const char *name;
    enum opt_type type;
    const char *def;
    const char *help;
    void *dst;
};

static const struct opt opts[] = {
    {"TLSMETER_OUT", OPT_STRING, "tlsmeter.%p.jsonl",
     "trace path template: %p pid, %t start time (s), %% a percent sign", &tlsm_cfg.out},
    {"TLSMETER_DISABLE", OPT_BOOL, "0", "1: load but trace nothing (pure pass-through)",
     &tlsm_cfg.disable},
    {"TLSMETER_READS", OPT_BOOL, "1", "write a read event per SSL_read*/SSL_peek* call",
     &tlsm_cfg.reads},
    {"TLSMETER_RECORDS", OPT_BOOL, "1", "write a rec event per decrypted TLS record",
     &tlsm_cfg.records},
    {"TLSMETER_CRYPTO", OPT_MODE, "native",
     "native: measure only; hw/soft: decrypt records on a hardware/software backend",
     &tlsm_cfg.crypto},
    {"TLSMETER_VERIFY", OPT_UINT, "0", "N: decrypt every Nth rerouted record both ways, compare",
     &tlsm_cfg.verify},
    {"TLSMETER_BACKEND_LIB", OPT_STRING, "",
     "libcrypto.so.3 to reroute into (default: system; a regular file <= 256 MiB)",
     &tlsm_cfg.backend_lib},
    {"TLSMETER_BACKEND_PROPQ", OPT_STRING, "", "OpenSSL 3 property query for the backend",
     &tlsm_cfg.backend_propq},
    {"TLSMETER_CALIBRATE", OPT_BOOL, "0",
     "1: measure hardware/software decrypt speed once at start (reference for verdicts)",
     &tlsm_cfg.calibrate},
    {"TLSMETER_STACKS", OPT_UINT, "0", "N: sample a call stack every N events per call site",
     &tlsm_cfg.stacks},
    {"TLSMETER_TEST_CORRUPT", OPT_BOOL, "0",
     "tests only: damage the backend's output of verified records (the native result is "
     "delivered), to prove TLSMETER_VERIFY catches a wrong backend",
     &tlsm_cfg.test_corrupt},
    {"TLSMETER_CPUTIME", OPT_CHOICE, "auto",
     "how crypto_ns is measured: auto (perf task-clock page, else rseq switch detection, else "
     "wall), perf, rseq, wall",
     &tlsm_cfg.cputime},
    {"TLSMETER_EVENTS", OPT_CHOICE, "all",
     "all: a rec and a read event per record and call; summary: totals and histograms "
     "written every TLSMETER_INTERVAL seconds and at exit (trace size independent of traffic); "
     "both: the two (to check one against the other)",
     &tlsm_cfg.events},
    {"TLSMETER_INTERVAL", OPT_UINT, "10",
     "summary mode: seconds between snapshots (0: at exit only)", &tlsm_cfg.interval},
    {"TLSMETER_QUIET", OPT_BOOL, "0", "1: no notices on stderr", &tlsm_cfg.quiet},
    {"TLSMETER_HELP", OPT_BOOL, "0", "1: print this table to stderr at start", &tlsm_cfg.help},
};

char tlsm_config_crypto_error[128];

static const char *const mode_names[] = {"native", "hw", "soft"};

const char *tlsm_mode_name(enum tlsm_crypto_mode m)
{
    return mode_names[m];
}

static int parse_bool(const char *v, bool *out)
{
    static const char *const yes[] = {"1", "yes", "true", "on"};
    static const char *const no[] = {"0", "no", "false", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (!strcasecmp(v, yes[i]))
            return *out = true, 0;
        if (!strcasecmp(v, no[i]))
            return *out = false, 0;
    }
    return -1;
}

/* A copy: programs that set their process title (nginx, postgres) overwrite the memory
 * getenv() pointed into, and the trace path is used long after start-up. Values longer
 * than the pool are cut (and still valid C strings). */
static const char *keep_string(const char *v)
{
    static char pool[3 * 4096];
    static size_t used;
    size_t n = strnlen(v, 4095);
    if (used + n + 1 > sizeof(pool))
        return "";
    char *p = memcpy(pool + used, v, n);
    p[n] = 0;
    used += n + 1;
    return p;
}

static int parse_uint(const char *v, unsigned *out)
{
    char *end;
    if (*v < '0' || *v > '9')
        return -1;
    unsigned long n = strtoul(v, &end, 10);
    if (*end || n > 1000000000ul)
        return -1;
    *out = (unsigned)n;
    return 0;
}

static int parse_mode(const char *v, enum tlsm_crypto_mode *out)
{
    for (size_t i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
        if (!strcmp(v, mode_names[i]))
            return *out = (enum tlsm_crypto_mode)i, 0;
    return -1;
}

/* OPT_CHOICE: the NULL-terminated names; dst holds the index of the one chosen. */
static const char *const *choices(const struct opt *o)
{
    static const char *const none[] = {NULL};
    static const char *const events[] = {"all", "summary", "both", NULL};
    if (o->dst == &tlsm_cfg.events)
        return events;
    return o->dst == &tlsm_cfg.cputime ? tlsm_cpu_setting_names : none;
}

static int parse_choice(const char *v, const struct opt *o)
{
    for (unsigned i = 0; choices(o)[i]; i++)
        if (!strcmp(v, choices(o)[i]))
            return *(unsigned *)o->dst = i, 0;
    return -1;
}

static const char *accepted(const struct opt *o)
{
    switch (o->type) {
    case OPT_BOOL:
        return "0/1, yes/no, true/false, on/off";
    case OPT_UINT:
        return "a whole number 0..1000000000";
    case OPT_MODE:
        return "native, hw, soft";
    case OPT_CHOICE: {
        static char names[128];
        size_t n = 0;
        for (unsigned i = 0; choices(o)[i] && n < sizeof(names); i++)
            n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", i ? ", " : "",
                                  choices(o)[i]);
        return names;
    }
    default:
        return "a non-empty string";
    }
}

static int parse_one(const struct opt *o, const char *v)
{
    switch (o->type) {
    case OPT_BOOL:
        return parse_bool(v, o->dst);
    case OPT_UINT:
        return parse_uint(v, o->dst);
    case OPT_MODE:
        return parse_mode(v, o->dst);
    case OPT_CHOICE:
        return parse_choice(v, o);
    default:
        if (!*v)
            return -1;
        *(const char **)o->dst = keep_string(v);
        return 0;
    }
}

static const struct opt *find_opt(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
        if (strlen(opts[i].name) == len && !strncmp(opts[i].name, name, len))
            return &opts[i];
    return NULL;
}

/* Typos like TLSMETER_RECORD=0 would silently do nothing: name them. */
static void warn_unknown(void)
{
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (strncmp(*e, "TLSMETER_", 9) || !eq || find_opt(*e, (size_t)(eq - *e)))
            continue;
        tlsm_warn("unknown variable %.*s ignored (TLSMETER_HELP=1 lists the known ones)",
                  (int)(eq - *e), *e);
    }
}

void tlsm_config_load(void)
{
    /* TLSMETER_QUIET first, so it also silences warnings about the other variables. */
    const char *q = getenv("TLSMETER_QUIET");
    if (q)
        parse_bool(q, &tlsm_cfg.quiet);
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
        const char *v = getenv(opts[i].name);
        if (!v)
            continue;
        if (parse_one(&opts[i], v) && opts[i].dst == &tlsm_cfg.crypto)
            snprintf(tlsm_config_crypto_error, sizeof(tlsm_config_crypto_error),
                     "TLSMETER_CRYPTO=\"%.64s\" is not valid (native, hw, soft)", v);
        if (parse_one(&opts[i], v))
            tlsm_warn("%s=\"%.64s\" is not valid (expected %s); using the default %s", opts[i].name,
                      v, accepted(&opts[i]), opts[i].def[0] ? opts[i].def : "(none)");
    }
    warn_unknown();
}

static size_t json_value(char *buf, size_t cap, const struct opt *o)
{
    switch (o->type) {
    case OPT_BOOL:
        return (size_t)snprintf(buf, cap, "%s", *(bool *)o->dst ? "true" : "false");
    case OPT_UINT:
        return (size_t)snprintf(buf, cap, "%u", *(unsigned *)o->dst);
    case OPT_MODE:
        return (size_t)snprintf(buf, cap, "\"%s\"",
                                tlsm_mode_name(*(enum tlsm_crypto_mode *)o->dst));
    case OPT_CHOICE:
        return (size_t)snprintf(buf, cap, "\"%s\"", choices(o)[*(unsigned *)o->dst]);
    default: {
        /* User paths and queries hold any bytes: escaped as every trace string is. A value
         * that does not fit is not cut (into invalid JSON): its length is said instead. */
        const char *s = *(const char **)o->dst ? *(const char **)o->dst : "";
        struct tlsm_json j = {.p = buf, .end = buf + cap};
        tlsm_json_put(&j, "\"", 1);
        tlsm_json_escaped(&j, s);
        tlsm_json_put(&j, "\"", 1);
        if (!j.full)
            return (size_t)(j.p - buf);
        return (size_t)snprintf(buf, cap, "\"(%zu bytes: too long for the header)\"", strlen(s));
    }
    }
}

/* The settings as the inside of a JSON object; an entry that does not fit in cap is left
 * out whole, so the result is always valid JSON. */
size_t tlsm_config_json(char *buf, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
        if (opts[i].dst == &tlsm_cfg.help)
            continue;
        size_t k = (size_t)snprintf(buf + n, cap - n, "%s\"%s\":", n ? "," : "", opts[i].name);
        size_t v = n + k < cap ? json_value(buf + n + k, cap - n - k, &opts[i]) : cap;
        if (n + k + v >= cap) {
            buf[n] = 0;
            continue;
        }
        n += k + v;
    }
    return n;
}

void tlsm_config_print_help(int fd)
{
    dprintf(fd, "tlsmeter settings (environment variables):\n");
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
        dprintf(fd, "  %-24s default %-18s %s\n", opts[i].name,
                opts[i].def[0] ? opts[i].def : "(none)", opts[i].help);
}
