/* attach.h: tlsmeter loaded into a program that is already running (`tlsmeter attach PID`):
 * the exported entry points the attaching tool calls, and what main.c shares with them.
 * docs/attach.md. */
#ifndef TLSM_ATTACH_H
#define TLSM_ATTACH_H

#include <stdbool.h>
#include <stddef.h>

/* Called by the attaching tool (attach/) in one thread of the process while every other
 * thread is stopped. settings: NAME=VALUE lines. 0 on success; else a sentence in msg. */
int tlsmeter_attach(const char *settings, char *msg, size_t cap);
int tlsmeter_detach(char *msg, size_t cap);

/* The constructor found the library loaded by a dlopen, not preloaded (main.c). */
extern bool tlsm_loaded_late;
/* ... and found another tlsmeter preloaded in the process. */
extern bool tlsm_preloaded_other;
/* main.c: */
bool tlsm_start_tracing(bool attach);
void tlsm_start_attached(void);
/* In a child forked while attached: every patch undone in it, tracing off. True if so. */
bool tlsm_attach_fork_child(void);

#endif
