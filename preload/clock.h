/* clock.h: the one timestamp source of the preload (raw ticks, converted to ns on output). */
#ifndef TLSM_CLOCK_H
#define TLSM_CLOCK_H

#include <stdint.h>
#include <time.h>

enum tlsm_clock_kind { TLSM_CLOCK_GETTIME, TLSM_CLOCK_TSC, TLSM_CLOCK_CNTVCT };

extern enum tlsm_clock_kind tlsm_clock_kind;
extern uint64_t tlsm_clock_hz;

/* now_ticks: cheapest monotonic counter available; ns only via tlsm_ticks_to_ns(). */
static inline uint64_t tlsm_now(void)
{
#if defined(__x86_64__)
    if (tlsm_clock_kind == TLSM_CLOCK_TSC) {
        uint32_t lo, hi;
        __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
        return ((uint64_t)hi << 32) | lo;
    }
#elif defined(__aarch64__)
    if (tlsm_clock_kind == TLSM_CLOCK_CNTVCT) {
        uint64_t v;
        __asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v) : : "memory");
        return v;
    }
#endif
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void tlsm_clock_init(void);
uint64_t tlsm_ticks_to_ns(uint64_t ticks);
uint64_t tlsm_mono_ns(void);
const char *tlsm_clock_name(void);
/* Measured cost of one tlsm_now() in ns (for the trace's overhead figures). */
uint64_t tlsm_clock_cost_ns(void);

#endif
