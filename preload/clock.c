/* clock.c: choose and calibrate now(): invariant TSC on x86_64, CNTVCT_EL0 on aarch64,
 * CLOCK_MONOTONIC otherwise. Calibration happens once, when the first trace is opened,
 * so programs that never touch TLS pay nothing. */
#include "clock.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

enum tlsm_clock_kind tlsm_clock_kind = TLSM_CLOCK_GETTIME;
uint64_t tlsm_clock_hz = 1000000000u;

/* ns = ticks * mult >> 32: one multiply on output, no division. */
static unsigned __int128 ticks_mult = (unsigned __int128)1 << 32;

uint64_t tlsm_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t tlsm_ticks_to_ns(uint64_t ticks)
{
    return (uint64_t)(((unsigned __int128)ticks * ticks_mult) >> 32);
}

static void set_hz(uint64_t hz)
{
    tlsm_clock_hz = hz;
    ticks_mult = ((unsigned __int128)1000000000u << 32) / hz;
}

#if defined(__x86_64__)
/* The TSC is a usable clock only when it is invariant (CPUID 0x80000007 EDX bit 8):
 * constant rate across P-states and not stopped in deep C-states. */
static int tsc_invariant(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007)
        return 0;
    __get_cpuid(0x80000007, &a, &b, &c, &d);
    return (d >> 8) & 1;
}

/* Calibrate against CLOCK_MONOTONIC over ~2 ms: error ~1e-5, invisible next to the
 * run-to-run noise of the things we measure. */
static void calibrate_tsc(void)
{
    uint64_t m0 = tlsm_mono_ns(), c0, c1, m1;
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    c0 = ((uint64_t)hi << 32) | lo;
    do {
        m1 = tlsm_mono_ns();
    } while (m1 - m0 < 2000000u);
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    c1 = ((uint64_t)hi << 32) | lo;
    if (c1 <= c0)
        return;
    set_hz((uint64_t)((unsigned __int128)(c1 - c0) * 1000000000u / (m1 - m0)));
    tlsm_clock_kind = TLSM_CLOCK_TSC;
}
#endif

void tlsm_clock_init(void)
{
#if defined(__x86_64__)
    if (tsc_invariant())
        calibrate_tsc();
#elif defined(__aarch64__)
    uint64_t frq;
    __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(frq));
    if (frq >= 1000000u) {
        set_hz(frq);
        tlsm_clock_kind = TLSM_CLOCK_CNTVCT;
    }
#endif
}

const char *tlsm_clock_name(void)
{
    switch (tlsm_clock_kind) {
    case TLSM_CLOCK_TSC:
        return "tsc";
    case TLSM_CLOCK_CNTVCT:
        return "cntvct";
    default:
        return "clock_gettime";
    }
}

uint64_t tlsm_clock_cost_ns(void)
{
    enum { N = 1000 };
    uint64_t t0 = tlsm_now(), x = 0;
    for (int i = 0; i < N; i++)
        x += tlsm_now();
    uint64_t t1 = tlsm_now();
    (void)x;
    return tlsm_ticks_to_ns(t1 - t0) / N;
}
