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

/* Where the settings come from: the environment, or (an attach, preload/hooks/attach.c) the
 * NAME=VALUE lines the attaching tool passed, kept here as NUL-separated strings. */
static char given[8192];
static bool from_given;

static const char *setting(const char *name)
{
    if (!from_given)
        return getenv(name);
    size_t n = strlen(name);
    for (const char *p = given; *p; p += strlen(p) + 1)
        if (!strncmp(p, name, n) && p[n] == '=')
            return p + n + 1;
    return NULL;
}

/* The settings' NAME=VALUE strings, in order. */
static char **settings_list(void)
{
    static char *list[128];
    if (!from_given)
        return environ;
    size_t k = 0;
    for (char *p = given; *p && k + 1 < sizeof(list) / sizeof(list[0]); p += strlen(p) + 1)
        list[k++] = p;
    list[k] = NULL;
    return list;
}

/* The defaults, also the base of an attach's settings. */
#define CFG_DEFAULTS                                                                               \
    {                                                                                              \
        .out = "tlsmeter.%p.trace", .reads = true, .writes = true, .records = true,                \
        .crypto = TLSM_MODE_NATIVE, .patch = true, .interval = 10,                                 \
    }
struct tlsm_config tlsm_cfg = CFG_DEFAULTS;

enum opt_type { OPT_BOOL, OPT_UINT, OPT_STRING, OPT_MODE, OPT_CHOICE };

struct opt {
    const char *name;
    enum opt_type type;
    const char *def;
    const char *help;
    void *dst;
};

static const struct opt opts[] = {
    {"TLSMETER_OUT", OPT_STRING, "tlsmeter.%p.trace",
     "trace path template: %p pid, %t start time (s), %% a percent sign (default name ends in "
     ".jsonl with TLSMETER_FORMAT=jsonl)",
     &tlsm_cfg.out},
    {"TLSMETER_FORMAT", OPT_CHOICE, "binary",
     "trace format: binary (format 2: fixed records, tlsmeter-analyze --jsonl prints it as JSON "
     "Lines) or jsonl (format 1, JSON Lines written directly)",
     &tlsm_cfg.format},
    {"TLSMETER_DISABLE", OPT_BOOL, "0", "1: load but trace nothing (pure pass-through)",
     &tlsm_cfg.disable},
    {"TLSMETER_READS", OPT_BOOL, "1", "write a read event per SSL_read*/SSL_peek* call",
     &tlsm_cfg.reads},
    {"TLSMETER_WRITES", OPT_BOOL, "1",
     "write a write event per SSL_write/SSL_write_ex/SSL_sendfile call", &tlsm_cfg.writes},
    {"TLSMETER_RECORDS", OPT_BOOL, "1", "write a rec event per TLS record, decrypted or encrypted",
     &tlsm_cfg.records},
    {"TLSMETER_CRYPTO", OPT_MODE, "native",
     "native: measure only; hw/soft: decrypt and encrypt records on a hardware/software backend",
     &tlsm_cfg.crypto},
    {"TLSMETER_VERIFY", OPT_UINT, "0",
     "N: run every Nth rerouted record both ways (backend and native), compare", &tlsm_cfg.verify},
    {"TLSMETER_BACKEND_LIB", OPT_STRING, "",
     "libcrypto (OpenSSL 3 or 1.1.1) to reroute into (default: the program's, else the "
     "system's; a regular file <= 256 MiB)",
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
    {"TLSMETER_CPUTIME_CHECK", OPT_BOOL, "0",
     "tests only: also read the thread CPU clock around every record and write the sums in "
     "the end line (two system calls a record)",
     &tlsm_cfg.cputime_check},
    {"TLSMETER_CPUTIME", OPT_CHOICE, "auto",
     "how crypto_ns is measured: auto (perf task-clock page, else rseq switch detection, else "
     "wall), perf, rseq, wall",
     &tlsm_cfg.cputime},
    {"TLSMETER_PATCH", OPT_BOOL, "1",
     "1: reach OpenSSL copies past LD_PRELOAD (GOT slots an RTLD_DEEPBIND dlopen bound, "
     "provider dispatch tables, SSL_* entry points, a copy's socket reads); 0: leave every "
     "object as loaded, blind spots are only named",
     &tlsm_cfg.patch},
    {"TLSMETER_CERTS", OPT_STRING, "",
     "DIR: save each peer certificate the handshakes parse as DIR/cert-ID.der (0600), for "
     "scripts/tlsmeter-certs; off by default (certificates can be private)",
     &tlsm_cfg.certs},
    {"TLSMETER_EVENTS", OPT_CHOICE, "all",
     "all: a rec event per record and a read or write event per call; summary: totals and "
     "histograms "
     "written every TLSMETER_INTERVAL seconds and at exit (trace size independent of traffic); "
     "both: the two (to check one against the other)",
     &tlsm_cfg.events},
    {"TLSMETER_INTERVAL", OPT_UINT, "10",
     "summary mode: seconds between snapshots (0: at exit only)", &tlsm_cfg.interval},
    {"TLSMETER_MEASURE", OPT_CHOICE, "provider",
     "provider: measure an OpenSSL 3 copy's records at its default provider's cipher functions "
     "(fewest calls per record; TLSMETER_CRYPTO=hw|soft always uses evp); evp: at the hooked EVP "
     "and GCM calls",
     &tlsm_cfg.measure},
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
static char pool[3 * 4096];
static size_t used;

static const char *keep_string(const char *v)
{
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
static const char *const format_names[] = {"binary", "jsonl", NULL};

static const char *const *choices(const struct opt *o)
{
    static const char *const none[] = {NULL};
    static const char *const events[] = {"all", "summary", "both", NULL};
    static const char *const measure[] = {"provider", "evp", NULL};
    if (o->dst == &tlsm_cfg.events)
        return events;
    if (o->dst == &tlsm_cfg.measure)
        return measure;
    if (o->dst == &tlsm_cfg.format)
        return format_names;
    return o->dst == &tlsm_cfg.cputime ? tlsm_cpu_setting_names : none;
}

const char *tlsm_format_suffix(void)
{
    return tlsm_cfg.format == TLSM_FORMAT_JSONL ? ".jsonl" : ".trace";
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
    for (char **e = settings_list(); e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (strncmp(*e, "TLSMETER_", 9) || !eq || find_opt(*e, (size_t)(eq - *e)))
            continue;
        tlsm_warn("unknown variable %.*s ignored (TLSMETER_HELP=1 lists the known ones)",
                  (int)(eq - *e), *e);
    }
}
/* TLSMETER_OUT's escapes are %p, %t and %%: another (%q) or a lone '%' at the end is a typo
 * that would name the trace "x.q" without a word; the default is used instead, said once. */
static void out_escapes(void)
{
    const char *v = setting("TLSMETER_OUT");
    for (const char *t = v; t && *t; t++) {
        if (*t != '%')
            continue;
        if (t[1] == 'p' || t[1] == 't' || t[1] == '%') {
            t++;
            continue;
        }
        char what[32];
        if (t[1])
            snprintf(what, sizeof(what), "the unknown escape %%%c", t[1]);
        else
            snprintf(what, sizeof(what), "a lone %% at the end");
        tlsm_warn("TLSMETER_OUT=\"%.64s\" is not valid: %s at offset %d (known: %%p pid, %%t "
                  "start time, %%%% a percent sign); using the default %s",
                  v, what, (int)(t - v), opts[0].def);
        tlsm_cfg.out = opts[0].def;
        return;
    }
}

void tlsm_config_load(void)
{
    /* TLSMETER_QUIET first, so it also silences warnings about the other variables. */
    const char *q = setting("TLSMETER_QUIET");
    if (q)
        parse_bool(q, &tlsm_cfg.quiet);
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
        const char *v = setting(opts[i].name);
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
    out_escapes();
    const char *out = setting("TLSMETER_OUT");
    if ((!out || !*out) && tlsm_cfg.format == TLSM_FORMAT_JSONL)
        tlsm_cfg.out = "tlsmeter.%p.jsonl"; /* format 1's name */
}

static void json_value(struct tlsm_json *j, const struct opt *o)
{
    switch (o->type) {
    case OPT_BOOL:
        tlsm_json_bool_k(j, TLSM_AFTER_KEY, *(bool *)o->dst);
        break;
    case OPT_UINT:
        tlsm_json_int_k(j, TLSM_AFTER_KEY, *(unsigned *)o->dst);
        break;
    case OPT_MODE:
        tlsm_json_safe_k(j, TLSM_AFTER_KEY, tlsm_mode_name(*(enum tlsm_crypto_mode *)o->dst));
        break;
    case OPT_CHOICE:
        tlsm_json_safe_k(j, TLSM_AFTER_KEY, choices(o)[*(unsigned *)o->dst]);
        break;
    default: /* user paths and queries hold any bytes: escaped as every trace string is */
        tlsm_json_str_k(j, TLSM_AFTER_KEY, *(const char **)o->dst);
    }
}

/* The header's "config" object: every setting by name. A value past its share of the line
 * is not cut (into invalid JSON): its length is said instead; an entry that still does not
 * fit is left out whole. */
void tlsm_config_write(struct tlsm_json *j)
{
    enum { VALUE_MAX = 1024 }; /* room left for the rest of the header in a 4 KiB line */
    tlsm_json_obj(j, "config");
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
        if (opts[i].dst == &tlsm_cfg.help || j->full)
            continue;
        char *entry = j->p;
        tlsm_json_key(j, opts[i].name);
        char *value = j->p;
        json_value(j, &opts[i]);
        if (!j->full && j->p - value <= VALUE_MAX && j->p < j->end) /* room for the `}` */
            continue;
        const char *s = *(const char **)opts[i].dst;
        char text[64];
        snprintf(text, sizeof(text), "(%zu bytes: too long for the header)", strlen(s ? s : ""));
        tlsm_json_rewind(j, value);
        tlsm_json_safe_k(j, TLSM_AFTER_KEY, text);
        if (j->full || j->p == j->end)
            tlsm_json_rewind(j, entry);
    }
    tlsm_json_obj_end(j);
}

void tlsm_config_print_help(int fd)
{
    dprintf(fd, "tlsmeter settings (environment variables):\n");
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
        dprintf(fd, "  %-24s default %-18s %s\n", opts[i].name,
                opts[i].def[0] ? opts[i].def : "(none)", opts[i].help);
}

/* An attach: the settings are the lines given (each NAME=VALUE, ended by a newline), on top of
 * the defaults, whatever the program's environment or an earlier attach said. False when they
 * do not fit. */
bool tlsm_config_load_given(const char *lines)
{
    static const struct tlsm_config defaults = CFG_DEFAULTS;
    size_t n = strnlen(lines, sizeof(given));
    if (n + 2 > sizeof(given))
        return false;
    memcpy(given, lines, n);
    given[n] = given[n + 1] = 0;
    for (size_t i = 0; i < n; i++)
        if (given[i] == '\n')
            given[i] = 0;
    tlsm_cfg = defaults;
    used = 0;
    from_given = true;
    tlsm_config_load();
    return true;
}
