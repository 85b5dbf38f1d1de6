/* cputime.h: on-CPU time of the record in flight, read in user space (no syscall per record).
 * Methods, chosen once per process (trace header `cputime`) and set up per thread at its
 * first record:
 *   perf-clock   per-thread PERF_COUNT_SW_TASK_CLOCK page with a user time base
 *                (cap_user_time): time_enabled + time_offset + scaled TSC/CNTVCT delta is the
 *                thread's on-CPU ns now, exact for every record;
 *   perf-switch  the page maps but has no user time base (VMs with kvm-clock): its `lock`
 *                sequence advances by 2 at every sched-in, so a record during which it moved
 *                was switched out; crypto time is wall time and the record is flagged;
 *   rseq         perf_event_open refused: the thread's rseq area (glibc >= 2.35) gets a
 *                descriptor of a never-executed range; the kernel clears it at any
 *                preemption or signal, so a cleared pointer at record end means switched out;
 *   wall         no detector: wall time, unflagged.
 * Hot path (tlsm_cpu_begin/end, tlsm_cpu_now): a few loads and at most one rdtsc/mrs. */
#ifndef TLSM_CPUTIME_H
#define TLSM_CPUTIME_H

#include "base/clock.h"
#include "base/cpumark.h"
#include "trace/thread.h"

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include "base/glibc_compat.h" /* <sys/rseq.h>, or its fallback before glibc 2.35 */

enum tlsm_cpu_kind {
    TLSM_CPU_UNSET = 0, /* thread not set up yet */
    TLSM_CPU_WALL,
    TLSM_CPU_PERF_CLOCK,
    TLSM_CPU_PERF_SWITCH,
    TLSM_CPU_RSEQ,
    TLSM_CPU_BLIND, /* the process detects switches, this thread could not: flag everything */
};

/* TLSMETER_CPUTIME values, in config.c's order. */
enum tlsm_cpu_setting { TLSM_CPUSET_AUTO, TLSM_CPUSET_PERF, TLSM_CPUSET_RSEQ, TLSM_CPUSET_WALL };
extern const char *const tlsm_cpu_setting_names[];

/* What one record (or GCM call) cost. */
struct tlsm_cpu_span {
    uint64_t cpu_ns;  /* on-CPU ns under perf-clock, else wall ns */
    uint64_t wall_ns; /* wall ns */
    uint32_t preempt; /* context switches seen (1 = at least one, for rseq) */
    bool stall;       /* a record's only, set by core/record.c: no switch, yet too slow */
};

extern const struct rseq_cs tlsm_rseq_desc;

void tlsm_cpu_thread_setup(struct tlsm_thread *th);
/* Records flagged in this process (end line `preempted`): counted by the record's end
 * (core/record.c), not by every span (a handshake part has its own count, conn.hs). */
void tlsm_cpu_count_preempted(void);
uint64_t tlsm_cpu_preempted(void);
/* Records flagged `stall` (core/record.c): end line `stalled`. */
void tlsm_cpu_count_stalled(void);
uint64_t tlsm_cpu_stalled(void);

static inline uint64_t tlsm_cpu_cycles(void)
{
    return tlsm_arch_cycles();
}

/* The thread's on-CPU ns from its task-clock page (the perf_event_mmap_page seqlock, as in
 * perf_event_open(2)); false when the page offers no user time base right now. *seq: the
 * even lock value the reading was consistent with. Bounded: a reader preempted 8 times in a
 * row gives up. */
static inline bool tlsm_perf_clock(const volatile struct perf_event_mmap_page *pg, uint64_t *ns,
                                   uint32_t *seq)
{
    for (int tries = 0; tries < 8; tries++) {
        uint32_t s = pg->lock;
        __asm__ volatile("" ::: "memory");
        if (!pg->cap_user_time)
            return false;
        uint64_t ena = pg->time_enabled, off = pg->time_offset;
        uint32_t mult = pg->time_mult;
        uint16_t shift = pg->time_shift;
        uint64_t cyc = tlsm_cpu_cycles();
        if (pg->cap_user_time_short) /* counter narrower than 64 bits (arm64) */
            cyc = pg->time_cycles + ((cyc - pg->time_cycles) & pg->time_mask);
        __asm__ volatile("" ::: "memory");
        if (pg->lock == s && !(s & 1)) {
            *ns = ena + off + (uint64_t)(((unsigned __int128)cyc * mult) >> shift);
            *seq = s;
            return true;
        }
    }
    return false;
}

static inline struct rseq *tlsm_rseq_area(void)
{
    return (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
}

/* The clock of the thread's method: on-CPU ns under perf-clock, tlsm_now() ticks otherwise
 * (convert deltas with tlsm_cpu_delta_ns). */
static inline uint64_t tlsm_cpu_now(const struct tlsm_thread *th)
{
    uint64_t ns;
    uint32_t seq;
    if (th->cpu_kind == TLSM_CPU_PERF_CLOCK && tlsm_perf_clock(th->cpu_page, &ns, &seq))
        return ns;
    return tlsm_now();
}

static inline uint64_t tlsm_cpu_delta_ns(const struct tlsm_thread *th, uint64_t delta)
{
    return th->cpu_kind == TLSM_CPU_PERF_CLOCK ? delta : tlsm_ticks_to_ns(delta);
}

/* Start of a record: remember in m (the record's, so records in flight together keep their
 * own) where the thread's clock and switch detector stand. */
static inline void tlsm_cpu_begin(struct tlsm_thread *th, struct tlsm_rsm_mark *m)
{
    if (__builtin_expect(th->cpu_kind == TLSM_CPU_UNSET, 0))
        tlsm_cpu_thread_setup(th);
    if (th->cpu_kind == TLSM_CPU_PERF_SWITCH) { /* the fast path of tlsm_cpu_end's */
        *m = (struct tlsm_rsm_mark){0, th->cpu_page->lock, false};
        __asm__ volatile("" ::: "memory");
        return;
    }
    /* Every field written (tlsm_cpu_end, inlined, reads them by method). */
    uint64_t cpu = 0;
    uint32_t seq = 0;
    bool ok = false;
    switch (th->cpu_kind) {
    case TLSM_CPU_PERF_CLOCK:
        ok = tlsm_perf_clock(th->cpu_page, &cpu, &seq);
        if (!ok)
            seq = th->cpu_page->lock;
        break;
    case TLSM_CPU_PERF_SWITCH:
        seq = th->cpu_page->lock;
        break;
    case TLSM_CPU_RSEQ:
        __atomic_store_n(&th->cpu_rseq->rseq_cs, (uint64_t)(uintptr_t)&tlsm_rseq_desc,
                         __ATOMIC_RELAXED);
        break;
    default:
        break;
    }
    *m = (struct tlsm_rsm_mark){cpu, seq, ok};
    __asm__ volatile("" ::: "memory");
}

/* End of a record begun at wall tick wall_t0 with tlsm_cpu_begin(th, m). rseq: the area is
 * per thread, so a record ending inside another's span clears it for both (the outer one is
 * then flagged switched out: conservative). Always inlined (records, handshake parts): out of
 * line its register saves and call cost ~30 instructions per span, ~1.4k per connection. */
static inline __attribute__((always_inline)) void tlsm_cpu_end(struct tlsm_thread *th,
                                                               uint64_t wall_t0,
                                                               const struct tlsm_rsm_mark *m,
                                                               struct tlsm_cpu_span *sp)
{
    __asm__ volatile("" ::: "memory");
    if (th->cpu_kind == TLSM_CPU_PERF_SWITCH) { /* VMs: wall time and the page's lock only */
        sp->cpu_ns = sp->wall_ns = tlsm_ticks_to_ns(tlsm_now() - wall_t0);
        sp->preempt = (th->cpu_page->lock - m->seq + 1) / 2;
        return;
    }
    uint64_t cpu = 0;
    uint32_t seq = 0;
    bool clock = th->cpu_kind == TLSM_CPU_PERF_CLOCK && m->cpu_ok &&
                 tlsm_perf_clock(th->cpu_page, &cpu, &seq);
    sp->wall_ns = tlsm_ticks_to_ns(tlsm_now() - wall_t0);
    sp->cpu_ns = clock ? cpu - m->cpu : sp->wall_ns;
    sp->preempt = 0;
    switch (th->cpu_kind) {
    case TLSM_CPU_PERF_CLOCK:
    case TLSM_CPU_PERF_SWITCH:
        if (!clock)
            seq = th->cpu_page->lock;
        sp->preempt = (seq - m->seq + 1) / 2;
        break;
    case TLSM_CPU_RSEQ:
        sp->preempt = __atomic_load_n(&th->cpu_rseq->rseq_cs, __ATOMIC_RELAXED) !=
                      (uint64_t)(uintptr_t)&tlsm_rseq_desc;
        __atomic_store_n(&th->cpu_rseq->rseq_cs, 0, __ATOMIC_RELAXED);
        break;
    case TLSM_CPU_BLIND:
        sp->preempt = 1;
        break;
    default:
        break;
    }
}

/* Process method (decided once, at the first call): trace header `cputime`/`cputime_why`. */
const char *tlsm_cputime_name(void);
const char *tlsm_cputime_why(void);
/* Thread exit: unmap the thread's page. Fork child: the parent's pages are not mapped in
 * the child (perf mappings are not inherited) and watched the parent's threads: forget them. */
void tlsm_cpu_thread_exit(struct tlsm_thread *th);
void tlsm_cpu_atfork_child(void);

#endif
