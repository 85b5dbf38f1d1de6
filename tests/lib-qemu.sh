# tests/lib-qemu.sh: run the target's programs, natively or (make check-aarch64) through
# qemu-aarch64-static, with one set of helpers. Sourced by tests/lib.sh.
# shellcheck shell=bash
#
# The environment tests/run gets from mk/aarch64.mk (unset on a native run):
#   TLSM_ARCH=aarch64                  the architecture the build under test is for
#   TLSM_SYSROOT=DIR                   the arm64 sysroot (scripts/aarch64-sysroot)
#   TLSM_RUNNER="qemu-aarch64-static -L DIR"   prefix that runs one target program
#   O, TLSM_PRELOAD                    the cross build's folder and libtlsmeter.so
#
# Under qemu-user the traced program's environment is the guest's, not qemu's:
# LD_PRELOAD and LD_LIBRARY_PATH go through `qemu -E` so the host side (qemu, env,
# timeout) never sees an arm64 library in its own LD_PRELOAD. Other variables
# (TLSMETER_*, OPENSSL_armcap) are plain environment, which qemu hands to the guest
# as it is: `qemu -E` would split a value at its commas.
#
# In a case:
#   run_target [VAR=VAL...] PROG ARGS...    run a target program (PROG without a slash is
#                                           looked up in the sysroot's /usr/bin under qemu)
#   run_traced [VAR=VAL...] PROG ARGS...    the same with LD_PRELOAD=$TLSM_PRELOAD
#   bg_target [VAR=VAL...] PROG ARGS...     run_target in the background; $! is the
#                                           program itself (qemu), so `kill $!` stops it
#   target_cmd [VAR=VAL...] PROG ARGS...    only build run_target's command line, in the
#                                           array TARGET_CMD: timeout 60 "${TARGET_CMD[@]}"
#   target_wrapper PROG FILE                write FILE, a script that runs PROG for the
#                                           target with its arguments (for code that takes
#                                           one program path: ANALYZE= of tests/golden/regen)
#   under_qemu                              true when target programs run through qemu
#   target_arch                             x86_64, aarch64 ...
# A case declares where it can run with a line `# tlsm-arch: x86_64 aarch64` (tests/run
# skips it elsewhere, naming the reason); without such a line it runs on the host only.

TLSM_ARCH=${TLSM_ARCH:-$(uname -m)}
TLSM_RUNNER=${TLSM_RUNNER:-}
TLSM_SYSROOT=${TLSM_SYSROOT:-}

target_arch() { echo "$TLSM_ARCH"; }
under_qemu() { [ -n "$TLSM_RUNNER" ]; }

# target_cmd [VAR=VAL...] PROG ARGS...: the command line, in the array TARGET_CMD (a plain
# command: timeout, env and xargs can run it, where they cannot run a shell function).
target_cmd() {
    local envs=() guest=() prog
    while [[ $# -gt 0 && $1 == [A-Za-z_]*=* ]]; do
        case $1 in
        LD_PRELOAD=* | LD_LIBRARY_PATH=*) guest+=("$1") ;;
        *) envs+=("$1") ;;
        esac
        shift
    done
    prog=$1
    shift
    if ! under_qemu; then
        TARGET_CMD=(env "${envs[@]}" "${guest[@]}" "$prog" "$@")
        return 0
    fi
    [[ $prog == */* ]] || prog=$TLSM_SYSROOT/usr/bin/$prog
    # Libraries are found through qemu -L alone: the guest loader opens
    # /usr/lib/aarch64-linux-gnu/..., qemu serves it from the sysroot, and the trace
    # names the paths a board would (lib.path, module.path: what --sysroot maps back).
    # A host LD_LIBRARY_PATH would be inherited by the guest: it is dropped.
    local q=() v
    for v in "${guest[@]}"; do
        q+=(-E "$v")
    done
    # shellcheck disable=SC2206
    TARGET_CMD=(env -u LD_PRELOAD -u LD_LIBRARY_PATH "${envs[@]}" $TLSM_RUNNER "${q[@]}" "$prog" "$@")
}

run_target() {
    target_cmd "$@"
    "${TARGET_CMD[@]}"
}

run_traced() {
    run_target LD_PRELOAD="$TLSM_PRELOAD" "$@"
}

bg_target() {
    target_cmd "$@"
    (exec "${TARGET_CMD[@]}") &
}

target_wrapper() {
    target_cmd "$1"
    {
        echo '#!/usr/bin/env bash'
        printf 'exec'
        printf ' %q' "${TARGET_CMD[@]}"
        echo ' "$@"'
    } >"$2" && chmod +x "$2"
}
