/* libpath.h: which libtlsmeter.so to load, and the path the target opens it by (a copy inside
 * its root when it lives in another mount namespace, as in a container). */
#ifndef TLSM_ATTACH_LIBPATH_H
#define TLSM_ATTACH_LIBPATH_H

#include <stddef.h>
#include <sys/types.h>

/* path (NULL: libtlsmeter.so beside this program, else ../lib/libtlsmeter.so from it) as an
 * absolute path of a regular file. 0, or -1 with why. */
int libpath_find(const char *path, char *out, size_t cap, char *why, size_t whycap);
/* The path pid's dlopen must get for lib: lib itself when /proc/PID/root/lib is the same file,
 * else a copy written to /tmp/tlsmeter-UID/libtlsmeter.so inside its root (UID: the
 * process's). 0, or -1 with why. */
int libpath_in_target(pid_t pid, unsigned uid, const char *lib, char *out, size_t cap, char *why,
                      size_t whycap);

#endif
