/* backend_copy.h: copying a libcrypto into a memfd for the backend (backend.c), with the
 * checks that keep a hostile TLSMETER_BACKEND_LIB from blocking or flooding the program. */
#ifndef TLSM_BACKEND_COPY_H
#define TLSM_BACKEND_COPY_H

#include <stdbool.h>
#include <stddef.h>

/* Largest file taken as a libcrypto (the real ones are 4..6 MiB). */
#define TLSM_BACKEND_MAX_SIZE (256L << 20)

/* A patched memfd copy of src (a regular ELF file, not tlsmeter itself, at most
 * TLSM_BACKEND_MAX_SIZE), or -1 with the reason in err. *symbolic: DF_SYMBOLIC was set,
 * so no RTLD_DEEPBIND is needed. */
int tlsm_backend_copy(const char *src, bool *symbolic, char *err, size_t cap);

#endif
