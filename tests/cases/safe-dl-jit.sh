#!/usr/bin/env bash
# safe-dl-jit: a hooked function called from where no loaded object is must be forwarded
# without loader calls from inside dl_iterate_phdr (which holds ld.so's write lock while a
# dlopen in another thread holds the loader lock and waits for it: a deadlock).
# (a) JIT-style callers: dlsafe writes a few instructions into an anonymous page (a call to
#     SSL_free found by dlsym(RTLD_DEFAULT), as LuaJIT's FFI or Java's FFM do) and calls
#     SSL_free(NULL) through it in a loop while another thread loads and unloads an unrelated
#     plugin 300 times. 100 runs.
# (b) an ordinary caller the object registry does not know: 300 reloads of a plugin (each load
#     a new object calling SSL_free and EVP_CIPHER_CTX_free once), then calls from one more
#     load while another thread loads and unloads an unrelated plugin 300 times. 20 runs.
# Every run bounded; exit code and output as untraced; every call counted by the hooks
# (end.hooks against the program's own count). Then both on Debian 11 with make dist's library.
# The cost per call of (a) is measured by scripts/bench-instructions (tests never time).
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
# shellcheck source=tests/lib-dlsafe.sh
. "$TLSM_TOP/tests/lib-dlsafe.sh"
# shellcheck source=tests/lib-bullseye.sh
. "$TLSM_TOP/tests/lib-bullseye.sh"
N=safe-dl-jit
d=$(case_dir)
tls_init "$d"
tls_need_preload "$N"
ds_init "$N" "$d"

# The hooks saw every call the program made (its count in the stats file).
counted() {
    local trace=$1 want fn n
    want=$(ds_stat "$2" calls)
    shift 2
    for fn in "$@"; do
        n=$(ds_hook "$trace" "$fn")
        if [ -z "$want" ] || [ "$n" != "$want" ]; then
            echo "end.hooks.$fn is $n, the program made ${want:-?} calls"
            return
        fi
    done
}
jit_counted() {
    counted "$1" "$2" SSL_free
}
reload_counted() {
    counted "$1" "$2" SSL_free EVP_CIPHER_CTX_free
}

run_all() {
    local where=$1 n1=$2 n2=$3
    DS_CHECK=jit_counted
    ds_repeat "$N (a) jit caller$where" "$n1" jit "$DS_DIR" 100000 300
    DS_CHECK=reload_counted
    ds_repeat "$N (b) 301st object$where" "$n2" reload "$DS_DIR" 300 1000 300
}
DS_CHECK_RUNS=100
run_all "" 100 20

ds_bullseye "$N"
run_all " bullseye" 30 10
