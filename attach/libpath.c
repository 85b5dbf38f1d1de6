/* libpath.c: locating the library and copying it into a target's root. The copy goes through
 * directory descriptors opened with O_NOFOLLOW from /proc/PID/root: a symbolic link planted in
 * the target's /tmp cannot send the write elsewhere. */
#include "libpath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The preload's sources built with the dynamic TLS model (mk/attachlib.mk): libtlsmeter.so's
 * initial-exec TLS does not fit in what a running process has left. */
#define LIB_NAME "libtlsmeter-attach.so"

static int regular_file(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Beside /proc/self/exe, or in ../lib from it (PREFIX/bin and PREFIX/lib). */
static int default_lib(char *out, size_t cap)
{
    char exe[PATH_MAX - 32], *slash; /* room for the file name in out */
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

    if (n <= 0)
        return -1;
    exe[n] = '\0';
    slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    snprintf(out, cap, "%s/%s", exe, LIB_NAME);
    if (regular_file(out))
        return 0;
    snprintf(out, cap, "%s/../lib/%s", exe, LIB_NAME);
    return regular_file(out) ? 0 : -1;
}

int libpath_find(const char *path, char *out, size_t cap, char *why, size_t whycap)
{
    char found[PATH_MAX], real[PATH_MAX];

    if (!path && default_lib(found, sizeof(found)) != 0) {
        snprintf(why, whycap,
                 "no %s beside tlsmeter-attach nor in ../lib from it; name one "
                 "with --lib",
                 LIB_NAME);
        return -1;
    }
    errno = 0;
    if (!realpath(path ? path : found, real) || !regular_file(real)) {
        snprintf(why, whycap, "the library %s: %s", path ? path : found,
                 errno ? strerror(errno) : "not a regular file");
        return -1;
    }
    snprintf(out, cap, "%s", real);
    return 0;
}

static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;

    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

static int copy_fd(int from, int to)
{
    char buf[65536];
    ssize_t n;

    while ((n = read(from, buf, sizeof(buf))) > 0)
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(to, buf + done, (size_t)(n - done));

            if (w <= 0)
                return -1;
            done += w;
        }
    return n == 0 ? 0 : -1;
}

/* Our directory inside the target's /tmp: made if missing, refused when it is a symbolic link,
 * not a directory, owned by someone else than root or the target's user, or writable by others. */
static int open_private_dir(int tmp, const char *name, unsigned uid, char *why, size_t whycap)
{
    struct stat st;
    int dir;

    if (mkdirat(tmp, name, 0755) == 0) {
        dir = openat(tmp, name, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir >= 0)
            fchmod(dir, 0755);
    } else {
        dir = openat(tmp, name, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (dir < 0) {
        snprintf(
            why, whycap, "/tmp/%s in the target's root is not a directory we can use: %s", name,
            errno == ELOOP || errno == ENOTDIR ? "a symbolic link or a file" : strerror(errno));
        return -1;
    }
    if (fstat(dir, &st) != 0 || (st.st_uid != 0 && st.st_uid != uid) || (st.st_mode & 022)) {
        snprintf(why, whycap,
                 "/tmp/%s in the target's root belongs to uid %u or is writable "
                 "by others: not using it",
                 name, (unsigned)st.st_uid);
        close(dir);
        return -1;
    }
    return dir;
}

/* Written under a temporary name and renamed: the target never sees a half-written file. */
static int write_copy(int dir, const char *lib, char *why, size_t whycap)
{
    char tmpname[64];
    int src, dst, rc;

    snprintf(tmpname, sizeof(tmpname), ".%s.%d", LIB_NAME, (int)getpid());
    unlinkat(dir, tmpname, 0);
    src = open(lib, O_RDONLY | O_CLOEXEC);
    dst = openat(dir, tmpname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    rc = src >= 0 && dst >= 0 && copy_fd(src, dst) == 0 && fchmod(dst, 0644) == 0 ? 0 : -1;
    if (dst >= 0 && close(dst) != 0)
        rc = -1;
    if (src >= 0)
        close(src);
    if (rc == 0 && renameat(dir, tmpname, dir, LIB_NAME) != 0)
        rc = -1;
    if (rc != 0) {
        snprintf(why, whycap, "cannot copy %s into the target's /tmp: %s", lib, strerror(errno));
        unlinkat(dir, tmpname, 0);
    }
    return rc;
}

int libpath_in_target(pid_t pid, unsigned uid, const char *lib, char *out, size_t cap, char *why,
                      size_t whycap)
{
    char inside[PATH_MAX + 64], dirname[32];
    int root, tmp, dir, rc;

    snprintf(inside, sizeof(inside), "/proc/%d/root%s", (int)pid, lib);
    if (same_file(inside, lib)) {
        snprintf(out, cap, "%s", lib);
        return 0;
    }
    snprintf(inside, sizeof(inside), "/proc/%d/root", (int)pid);
    snprintf(dirname, sizeof(dirname), "tlsmeter-%u", uid);
    root = open(inside, O_PATH | O_DIRECTORY | O_CLOEXEC);
    tmp = root >= 0 ? openat(root, "tmp", O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (root >= 0)
        close(root);
    if (tmp < 0) {
        snprintf(why, whycap, "the target's root has no usable /tmp for a copy of %s: %s", lib,
                 strerror(errno));
        return -1;
    }
    dir = open_private_dir(tmp, dirname, uid, why, whycap);
    close(tmp);
    if (dir < 0)
        return -1;
    rc = write_copy(dir, lib, why, whycap);
    close(dir);
    if (rc == 0)
        snprintf(out, cap, "/tmp/%s/%s", dirname, LIB_NAME);
    return rc;
}
