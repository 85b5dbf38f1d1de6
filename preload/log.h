/* log.h: the preload's only voice: one stderr line per problem, never exit or abort. */
#ifndef TLSM_LOG_H
#define TLSM_LOG_H

/* Remember which file stderr is (constructor), so a reused descriptor 2 is never written. */
void tlsm_log_init(void);
/* Print "tlsmeter: ..." to stderr with one write(2), unless TLSMETER_QUIET. */
void tlsm_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
