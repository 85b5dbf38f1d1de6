#!/usr/bin/env bash
# safe-dl-deferred: what the preload did to an object's GOT must stay tied to that load of it.
# outer.so (loaded plainly) dlopens outer-in.so RTLD_DEEPBIND by path in its constructor and
# dlcloses it in its destructor; outer-in.so calls SSL_free and EVP_CIPHER_CTX_free through its
# own PLT (linked to libssl and libcrypto), so its slots bind past the hooks and the preload
# rewrites them. ld.so defers the nested unload to the end of the outer dlclose: right after
# the inner dlclose the object is still there, and it is gone when the outer one returns
# (dlsafe prints both counts, untraced as traced). Then two unrelated plugins are loaded and
# unloaded; their handles (link_maps) usually take the freed ones' addresses. A patch record
# keyed by that address and still live reverts "its" slots in memory unmapped since: SIGSEGV.
# Checks per run: exit code and output as untraced, and every call of each reloaded copy
# traced (end.hooks: SSL_free and EVP_CIPHER_CTX_free = rounds x calls; a reload that kept the
# first copy's record would stay blind). 20 runs of 40 rounds (more rounds than the patch
# table once had entries); then on Debian 11 with the make dist library.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=tests/lib-dlsafe.sh
. "$TLSM_TOP/tests/lib-dlsafe.sh"
# shellcheck source=tests/lib-bullseye.sh
. "$TLSM_TOP/tests/lib-bullseye.sh"
N=safe-dl-deferred
ROUNDS=40
CALLS=5
d=$(case_dir)
tls_init "$d"
tls_need_preload "$N"
ds_init "$N" "$d"
ds_need_deepbind "$N"

# Every round's copy of outer-in.so was traced: each of its calls reached a hook.
all_traced() {
    local want=$((ROUNDS * CALLS)) fn n
    for fn in SSL_free EVP_CIPHER_CTX_free; do
        n=$(ds_hook "$1" "$fn")
        [ "$n" = "$want" ] || {
            echo "end.hooks.$fn is $n, want $want ($ROUNDS reloaded copies x $CALLS calls)"
            return
        }
    done
}
DS_CHECK=all_traced
DS_CHECK_RUNS=20
ds_repeat "$N" 20 deferred "$d" "$ROUNDS" "$CALLS"

ds_bullseye "$N"
ds_repeat "$N bullseye" 10 deferred "$DS_DIR" "$ROUNDS" "$CALLS"
