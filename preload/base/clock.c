/* clock.c: choose and calibrate now(): the architecture's cycle counter when it is a clock
 * (invariant TSC on x86_64, CNTVCT_EL0 on aarch64: arch/$ARCH/cpu.c), CLOCK_MONOTONIC
 * otherwise. Calibration happens once, when the first trace is opened,
 * so programs that never touch TLS pay nothing. */
#include "base/clock.h"

enum tlsm_clock_kind tlsm_clock_kind = TLSM_CLOCK_GETTIME;
uint64_t tlsm_clock_hz = 1000000000u;

/* ns = ticks * mult >> 32 (clock.h): one multiply on output, no division. mult is below 2^62
 * for any rate of 1 Hz or more, and a tick count times it below 2^126. */
uint64_t tlsm_ticks_mult = (uint64_t)1 << 32;

uint64_t tlsm_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void set_hz(uint64_t hz)
{
    tlsm_clock_hz = hz;
    tlsm_ticks_mult = (uint64_t)(((unsigned __int128)1000000000u << 32) / hz);
}

void tlsm_clock_init(void)
{
    uint64_t hz;
    if (tlsm_arch_counter_hz(&hz) && hz) {
        set_hz(hz);
        tlsm_clock_kind = TLSM_CLOCK_COUNTER;
    }
}

const char *tlsm_clock_name(void)
{
    return tlsm_clock_kind == TLSM_CLOCK_COUNTER ? TLSM_ARCH_CLOCK : "clock_gettime";
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
