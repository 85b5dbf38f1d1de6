#!/usr/bin/env bash
# safe-dl-deadlock: an RTLD_DEEPBIND dlopen inside a library constructor must not deadlock with
# another thread's RTLD_DEEPBIND dlopen. Thread A loops dlopen(p1.so, RTLD_DEEPBIND) by path
# and dlclose; thread B loops a plain dlopen of n2.so, whose constructor (run by ld.so with its
# loader lock held) dlopens n2-in.so RTLD_DEEPBIND by path, and dlclose (tests/progs/dlsafe.c,
# tests/dlsafe/). A preload that holds a lock of its own across the real dlopen while the
# loader's lock may be held the other way round hangs here: B waits for it inside the loader
# lock, A holds it and waits for the loader lock. Each load makes one call of SSL_free and
# EVP_CIPHER_CTX_free from the DEEPBIND-loaded copy, and the first runs' traces must count
# every one of them (their GOT slots rewritten on each load). 100 traced runs of 200 loops
# per thread (untraced: a few tens of ms each), every run bounded; then the same with the make
# dist library on Debian 11 (glibc 2.31, where _dl_find_object is emulated).
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=tests/lib-dlsafe.sh
. "$TLSM_TOP/tests/lib-dlsafe.sh"
# shellcheck source=tests/lib-bullseye.sh
. "$TLSM_TOP/tests/lib-bullseye.sh"
N=safe-dl-deadlock
d=$(case_dir)
tls_init "$d"
tls_need_preload "$N"
ds_init "$N" "$d"
ds_need_deepbind "$N"

# Every call from the DEEPBIND-loaded copies reached a hook (2 x 200 of each function).
all_traced() {
    local fn n
    for fn in SSL_free EVP_CIPHER_CTX_free; do
        n=$(ds_hook "$1" "$fn")
        [ "$n" = 400 ] || {
            echo "end.hooks.$fn is $n, want 400 (2 threads x 200 loads, a call each)"
            return
        }
    done
}
DS_CHECK=all_traced
DS_CHECK_RUNS=100
ds_repeat "$N" 100 deadlock "$d" 200

# Debian 11 (skips the rest, naming why, when its packages cannot be fetched).
ds_bullseye "$N"
ds_repeat "$N bullseye" 30 deadlock "$DS_DIR" 200
