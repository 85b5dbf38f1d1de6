/* cpumark.h: where a thread's clock stood when a record began. The record state machine
 * (core/recsm.h) keeps one per record and hands it back untouched; the clock code
 * (trace/cputime.h) fills and reads it. Here so that neither layer imports the other. */
#ifndef TLSM_CPUMARK_H
#define TLSM_CPUMARK_H

#include <stdbool.h>
#include <stdint.h>

struct tlsm_rsm_mark {
    uint64_t cpu;
    uint32_t seq;
    bool cpu_ok;
};

#endif
