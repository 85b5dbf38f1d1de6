/* trace_header.c: the header line's fields: who is traced, on what CPU and clock, with
 * which settings and I/O mode. */
#include "trace/trace_header.h"
#include "trace/trace.h"
#include "arch/arch.h"
#include "base/caps.h"
#include "base/clock.h"
#include "trace/config.h"
#include "trace/cputime.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

void tlsm_tr_header_fields(struct tlsm_json *j, const struct tlsm_tr_hdr *h)
{
    char cpu[256], exe[PATH_MAX], comm[32] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = 0;
    FILE *f = fopen("/proc/self/comm", "re");
    if (f) {
        if (!fgets(comm, sizeof(comm), f))
            comm[0] = 0;
        comm[strcspn(comm, "\n")] = 0;
        fclose(f);
    }
    tlsm_cpu_model(cpu, sizeof(cpu));
    tlsm_json_int(j, "format", tlsm_cfg.format == TLSM_FORMAT_JSONL ? 1 : 2);
    tlsm_json_str(j, "tool", "tlsmeter");
    tlsm_json_str(j, "version", TLSM_VERSION);
    tlsm_json_int(j, "pid", getpid());
    tlsm_json_int(j, "ppid", getppid());
    if (h->fork_of)
        tlsm_json_int(j, "fork_of", h->fork_of);
    if (tlsm_trace_attached) /* loaded into the running process: what came before is unseen */
        tlsm_json_bool(j, "attached", true);
    tlsm_json_str(j, "io", h->mapped ? "mmap" : "write");
    if (h->io_why[0])
        tlsm_json_str(j, "io_why", h->io_why);
    tlsm_json_str(j, "exe", exe);
    tlsm_json_str(j, "comm", comm);
    tlsm_json_int(j, "start_unix_ns", (int64_t)h->unix_t0);
    tlsm_json_int(j, "mono_ns", (int64_t)h->mono_t0);
    tlsm_json_int(j, "since_start_ns", (int64_t)h->since_start_ns);
    /* The process's CPU before the trace opened (start-up, and any image before an exec: CPU
     * time survives exec): the report's CPU is the end line's minus this, the CPU of the span
     * the trace covers. */
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        tlsm_json_int(j, "start_cpu_ns",
                      ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
                          ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000);
    tlsm_json_str(j, "clock", tlsm_clock_name());
    tlsm_json_int(j, "clock_hz", (int64_t)tlsm_clock_hz);
    tlsm_json_int(j, "clock_cost_ns", (int64_t)tlsm_clock_cost_ns());
    tlsm_json_str(j, "cputime", tlsm_cputime_name());
    if (*tlsm_cputime_why())
        tlsm_json_str(j, "cputime_why", tlsm_cputime_why());
    tlsm_json_str(j, "arch", TLSM_ARCH_NAME);
    tlsm_json_str(j, "cpu", cpu);
    if (tlsm_cpu_emulated())
        tlsm_json_bool(j, "emulated", true);
    tlsm_cpu_crypto_write(j);
    tlsm_json_int(j, "ncpu", sysconf(_SC_NPROCESSORS_ONLN));
    tlsm_json_str(j, "crypto_mode", tlsm_mode_name(tlsm_cfg.crypto));
    tlsm_config_write(j); /* last: its long values may take what room is left */
}
