/* profile.h: the crypto weight of a model as named call paths (outermost frame first), ready
 * for folded output, the SVG flame graph and the caller attribution of the reports. */
#ifndef TLSM_PROFILE_H
#define TLSM_PROFILE_H

#include "base/imap.h"
#include "model/model.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define PROFILE_TOP 10

/* One weighted call path. */
struct pentry {
    uint32_t trace;
    uint64_t ns, bytes;
    uint32_t first, n; /* frames[first .. first + n): name indices, outermost first */
    bool stacked;      /* a recorded stack (else the one-frame-per-connection fallback) */
    int caller;        /* frame that called into the SSL library (SSL_read ...); -1 unknown */
    int caller_mod;    /* that frame's module; -1 unknown */
    int crypto_mod;    /* the library that decrypted (rec.lib) */
};

struct prow {
    int name;
    uint64_t ns;
};

/* "Who is decrypting", over all stacked paths; shares are of crypto_ns. */
struct callers {
    struct prow top[PROFILE_TOP], mods[PROFILE_TOP], crypto[PROFILE_TOP];
    int ntop, nmods, ncrypto;
};

struct profile {
    char **names;
    size_t nnames, cap_names;
    uint32_t *frames;
    size_t nframes, cap_frames;
    struct pentry *e;
    size_t ne, cap_e;
    struct imap name_map, frame_cache;
    bool any_stacks;
    int64_t sampling; /* TLSMETER_STACKS of the traces with stacks (largest) */
    uint64_t nstacks, crypto_ns, ns_sampled, ns_inherited, ns_none;
    struct callers callers;
};

/* sysroot: where the recorded paths are found (NULL: as recorded). symbols false: no file is
 * opened (frames as module+0xoffset), for the fuzz target. */
void profile__build(struct profile *p, const struct model *m, const char *sysroot, bool symbols,
                    FILE *warn);
void profile__free(struct profile *p);
const char *profile__name(const struct profile *p, int idx);
int profile__intern(struct profile *p, const char *s);
/* The caller attribution (profile_callers.c); called by profile__build. */
void profile__callers(struct profile *p);

#endif
