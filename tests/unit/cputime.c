/* tests/unit/cputime.c: the perf-clock reading of a task-clock page (cputime.h) on synthetic
 * pages, since machines without a user time base (VMs) never run it: the perf_event_open(2)
 * formula, the seqlock, a narrow counter (cap_user_time_short), no time base. */
#include "trace/cputime.h"

#include <stdio.h>
#include <string.h>

static int failed;

static void want(const char *what, int ok)
{
    if (!ok) {
        printf("FAIL cputime %s\n", what);
        failed++;
    }
}

/* A page as the kernel leaves it at the thread's last sched-in: time_enabled ns on the CPU so
 * far, and time_offset so that enabled + offset + cycles-as-ns is the on-CPU time now. */
static void page_at(struct perf_event_mmap_page *pg, uint64_t enabled, uint32_t mult,
                    uint16_t shift)
{
    memset(pg, 0, sizeof(*pg));
    pg->lock = 42;
    pg->cap_user_time = 1;
    pg->time_enabled = pg->time_running = enabled;
    pg->time_mult = mult;
    pg->time_shift = shift;
    uint64_t cyc = tlsm_cpu_cycles();
    pg->time_offset = (uint64_t)0 - (uint64_t)(((unsigned __int128)cyc * mult) >> shift);
}

static void formula(void)
{
    static struct perf_event_mmap_page pg;
    uint64_t a, b;
    uint32_t s1, s2;
    page_at(&pg, 5000000000u, 3u << 20, 21); /* 1.5 ns per cycle */
    want("reads with a time base", tlsm_perf_clock(&pg, &a, &s1));
    uint64_t c0 = tlsm_cpu_cycles();
    while (tlsm_cpu_cycles() - c0 < 1000000)
        ;
    uint64_t c1 = tlsm_cpu_cycles();
    want("reads again", tlsm_perf_clock(&pg, &b, &s2));
    want("starts at time_enabled", a >= 5000000000u && a - 5000000000u < 1000000000u);
    /* 1e6 cycles at 1.5 ns: 1.5 ms, within the cycles the calls themselves took */
    want("advances by cycles x mult >> shift",
         b - a >= 1500000 && b - a <= (uint64_t)((c1 - c0) * 3 / 2) + 1000000);
    want("sequence reported", s1 == 42 && s2 == 42);
    pg.lock = 43; /* the kernel in the middle of an update: never a torn value */
    want("odd lock refused (bounded)", !tlsm_perf_clock(&pg, &a, &s1));
    pg.lock = 44;
    pg.cap_user_time = 0;
    want("no time base refused", !tlsm_perf_clock(&pg, &a, &s1));
}

/* arm64: a 56-bit counter; time_cycles/time_mask fold the reading so the formula stays
 * continuous across the wrap of the low bits. */
static void short_counter(void)
{
    static struct perf_event_mmap_page pg;
    uint64_t a, b;
    uint32_t s;
    page_at(&pg, 1000, 1u << 20, 20); /* 1 ns per cycle */
    pg.cap_user_time_short = 1;
    pg.time_mask = ~(uint64_t)0; /* a full-width mask: identical to the plain formula */
    pg.time_cycles = tlsm_cpu_cycles();
    want("short counter reads", tlsm_perf_clock(&pg, &a, &s));
    want("short counter value", a >= 1000 && a < 1000 + 1000000000u);
    pg.time_mask = 0; /* every reading folds onto time_cycles: time stands still */
    pg.time_cycles = 123456;
    pg.time_offset = (uint64_t)0 - 123456;
    want("mask folds", tlsm_perf_clock(&pg, &b, &s) && b == 1000);
}

int main(void)
{
    formula();
    short_counter();
    if (!failed)
        printf("PASS unit cputime: perf-clock formula, seqlock, short counter\n");
    return failed != 0;
}
