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
#
# Userlands: a case with a line `# tlsm-userland: trixie` runs once more with the programs of
# that Debian release (tests/run sets, from scripts/debian-root):
#   TLSM_USERLAND=trixie               the release (unset: the host's programs)
#   TLSM_UL_ROOT=DIR                   its root, made from Debian's packages
#   TLSM_UL_LD, TLSM_UL_LIBPATH        its loader and library path (x86_64)
#   TLSM_UL_OPENSSL                    its OpenSSL's version text, "OpenSSL 3.5." (its package)
# Then target_cmd runs the release's programs and libraries, the host's kernel underneath:
#   x86_64   ROOT's ld.so --library-path ROOT/usr/lib/... [--preload LIB] PROG
#            (tests/tools/ul-exec, which also searches a caller's LD_LIBRARY_PATH first)
#   aarch64  qemu-aarch64-static -L ROOT [-E LD_PRELOAD=LIB] PROG
# and a bare PROG (openssl, curl, python3) is ROOT/usr/bin/PROG, $TLSM_PY the release's
# python3. Our own test clients run there too, on the release's libssl. tlsmeter's analyzer
# (it needs libraries the root does not have) keeps running as before, however it is
# started (run_target, run_tool, target_wrapper).
#   in_userland                             true when the programs are a release's
#   run_tool [VAR=VAL...] PROG ARGS...      run one of our tools (host, or sysroot under qemu)
#   ul_openssl                              the release's OpenSSL version text (lib events)

TLSM_ARCH=${TLSM_ARCH:-$(uname -m)}
TLSM_RUNNER=${TLSM_RUNNER:-}
TLSM_SYSROOT=${TLSM_SYSROOT:-}

TLSM_USERLAND=${TLSM_USERLAND:-}
target_arch() { echo "$TLSM_ARCH"; }
under_qemu() { [ -n "$TLSM_RUNNER" ]; }
in_userland() { [ -n "$TLSM_USERLAND" ]; }

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
    local ul=${TLSM_USERLAND:+$TLSM_UL_ROOT}
    # Our analyzer is a tool, whichever helper a case starts it with; the tests' Python is
    # the release's own python3 there (its ssl module on the release's libssl).
    [ -n "${TLSM_AS_TOOL:-}" ] || [[ $prog == */tlsmeter-analyze ]] && ul=
    [ -n "$ul" ] && [ "$prog" = "${TLSM_PY:-}" ] && prog=python3
    if [ -n "$ul" ] && ! under_qemu; then
        # The release's own loader: its glibc and libraries, whatever the host has.
        local pre='' v
        for v in "${guest[@]}"; do
            case $v in
            LD_PRELOAD=*) pre=${v#LD_PRELOAD=} ;;
            *) envs+=("$v") ;;
            esac
        done
        [[ $prog == */* ]] || prog=$ul/usr/bin/$prog
        TARGET_CMD=(env -u LD_PRELOAD "${envs[@]}" TLSM_UL_PRELOAD="$pre"
            "$TLSM_TOP/tests/tools/ul-exec" "$prog" "$@")
        return 0
    fi
    if ! under_qemu; then
        TARGET_CMD=(env "${envs[@]}" "${guest[@]}" "$prog" "$@")
        return 0
    fi
    local root=${ul:-$TLSM_SYSROOT} runner=$TLSM_RUNNER
    # shellcheck disable=SC2001
    [ -n "$ul" ] && runner=$(echo "$TLSM_RUNNER" | sed "s| -L [^ ]*| -L $ul|")
    [[ $prog == */* ]] || prog=$root/usr/bin/$prog
    # Libraries are found through qemu -L alone: the guest loader opens
    # /usr/lib/aarch64-linux-gnu/..., qemu serves it from the sysroot, and the trace
    # names the paths a board would (lib.path, module.path: what --sysroot maps back).
    # A host LD_LIBRARY_PATH would be inherited by the guest: it is dropped.
    local q=() v
    for v in "${guest[@]}"; do
        q+=(-E "$v")
    done
    # shellcheck disable=SC2206
    TARGET_CMD=(env -u LD_PRELOAD -u LD_LIBRARY_PATH "${envs[@]}" $runner "${q[@]}" "$prog" "$@")
}

# ul_openssl: the version text of the userland's OpenSSL, as a lib event's `version` begins.
ul_openssl() {
    echo "${TLSM_UL_OPENSSL:-OpenSSL}"
}

run_tool() {
    TLSM_AS_TOOL=1 target_cmd "$@"
    "${TARGET_CMD[@]}"
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
    TLSM_AS_TOOL=1 target_cmd "$1"
    {
        echo '#!/usr/bin/env bash'
        printf 'exec'
        printf ' %q' "${TARGET_CMD[@]}"
        echo ' "$@"'
    } >"$2" && chmod +x "$2"
}
