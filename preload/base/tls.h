/* tls.h: the thread-local model of the preload's per-thread state. Preloaded, the library's
 * TLS is part of the static block every thread gets at creation: initial-exec, one load per
 * access. The attach build (libtlsmeter-attach.so) is loaded by a dlopen into a running
 * program, where glibc has only a few hundred bytes of static TLS to spare (ours is ~5 KiB):
 * there the default dynamic model is used, one call per access (TLSDESC, cheap once a
 * thread's block exists). */
#ifndef TLSM_TLS_H
#define TLSM_TLS_H

#ifdef TLSM_DYNAMIC_TLS
#define TLSM_IE
#else
#define TLSM_IE __attribute__((tls_model("initial-exec")))
#endif

#endif
