/* clock.h: the one timestamp source of the preload (raw ticks, converted to ns on output). */
#ifndef TLSM_CLOCK_H
#define TLSM_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "arch/arch.h"

/* COUNTER: the architecture's cycle counter (TSC, CNTVCT_EL0: arch/$ARCH/counter.h). */
enum tlsm_clock_kind { TLSM_CLOCK_GETTIME, TLSM_CLOCK_COUNTER };

extern enum tlsm_clock_kind tlsm_clock_kind;
extern uint64_t tlsm_clock_hz;

/* now_ticks: cheapest monotonic counter available; ns only via tlsm_ticks_to_ns(). */
static inline uint64_t tlsm_now(void)
{
    if (tlsm_clock_kind == TLSM_CLOCK_COUNTER)
        return tlsm_arch_cycles();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void tlsm_clock_init(void);
extern uint64_t tlsm_ticks_mult;
/* Ticks as ns: inline, it runs several times per record. */
static inline uint64_t tlsm_ticks_to_ns(uint64_t ticks)
{
    return (uint64_t)(((unsigned __int128)ticks * tlsm_ticks_mult) >> 32);
}
uint64_t tlsm_mono_ns(void);
const char *tlsm_clock_name(void);
/* Measured cost of one tlsm_now() in ns (for the trace's overhead figures). */
uint64_t tlsm_clock_cost_ns(void);

#endif
