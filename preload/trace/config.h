/* config.h: the TLSMETER_* settings, parsed once from one table (config.c). */
#ifndef TLSM_CONFIG_H
#define TLSM_CONFIG_H

#include "base/json.h"

#include <stdbool.h>
#include <stddef.h>

enum tlsm_crypto_mode { TLSM_MODE_NATIVE, TLSM_MODE_HW, TLSM_MODE_SOFT };
/* TLSMETER_FORMAT: trace format 2 (binary, docs/trace-format.md) or 1 (JSON Lines). */
enum tlsm_format { TLSM_FORMAT_BINARY, TLSM_FORMAT_JSONL };

struct tlsm_config {
    const char *out; /* path template: %p pid, %t start time, %% */
    bool disable;
    bool reads;
    bool writes;
    bool records;
    bool quiet;
    bool help;
    bool calibrate;
    bool cputime_check; /* TLSMETER_CPUTIME_CHECK (cputime_check.h) */
    bool patch;         /* reach copies that bind past the hooks (GOT slots, tables, entries) */
    enum tlsm_crypto_mode crypto;
    unsigned verify; /* every Nth rerouted record decrypted both ways; 0 = off */
    unsigned stacks; /* one stack every N events per call site; 0 = off */
    const char *backend_lib;
    const char *backend_propq;
    bool test_corrupt; /* tests only: damage verified backend output */
    unsigned cputime;  /* TLSMETER_CPUTIME: enum tlsm_cpu_setting (cputime.h) */
    const char *certs; /* TLSMETER_CERTS: directory for peer certificates (hs_certs.c) */
    unsigned format;   /* TLSMETER_FORMAT: enum tlsm_format */
    unsigned events;   /* TLSMETER_EVENTS: 0 all (a line per record and read), 1 summary, 2 both */
    unsigned interval; /* TLSMETER_INTERVAL: seconds between summary snapshots */
    unsigned measure;  /* TLSMETER_MEASURE: enum tlsm_measure */
};
/* TLSMETER_MEASURE: where an OpenSSL 3 copy's records are measured (docs/design.md section 2):
 * at its default provider's cipher functions (the EVP and GCM calls of its libssl and
 * libcrypto bound past the hooks), or at the hooked EVP and GCM calls. */
enum tlsm_measure { TLSM_MEASURE_PROVIDER, TLSM_MEASURE_EVP };
#define TLSM_EVENTS_SUMMARY 1
#define TLSM_EVENTS_BOTH    2

extern struct tlsm_config tlsm_cfg;
/* Why TLSMETER_CRYPTO fell back to native ("" when it did not), for the trace. */
extern char tlsm_config_crypto_error[128];

/* Parse the environment into tlsm_cfg; warns once per malformed or unknown variable. */
void tlsm_config_load(void);
/* An attach: the settings from NAME=VALUE lines instead of the environment (config.c). */
bool tlsm_config_load_given(const char *lines);
/* The header's "config" member: the settings in effect, by name. */
void tlsm_config_write(struct tlsm_json *j);
/* Print the table (name, type, default, help) to fd: TLSMETER_HELP=1 and the wrapper's --help. */
void tlsm_config_print_help(int fd);
const char *tlsm_mode_name(enum tlsm_crypto_mode m);
/* The trace file's name ending for the format: ".trace" (2) or ".jsonl" (1). */
const char *tlsm_format_suffix(void);

#endif
