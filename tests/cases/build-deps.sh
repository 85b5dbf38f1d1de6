#!/usr/bin/env bash
# build-deps: the Makefile's header dependencies (-MMD -MP) rebuild exactly what includes a
# touched file. A copy of the sources is built in a scratch tree; then preload/base/hooks.def,
# common/schema.def (the trace vocabulary both programs share), one analyzer header and
# tests/progs/tlsget.h are touched in turn and `make -n` must compile
# exactly the objects whose source includes it, directly or through another header (found by
# following `#include "..."` lines here, not by the compiler). Also: a fresh build is
# up to date (`make -q`), an object without its .d file is rebuilt, and a deleted header
# does not break the build (-MP).
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
d=$(case_dir)
src=$d/src
mkdir -p "$src/tests"
cp -a "$TLSM_TOP/Makefile" "$TLSM_TOP/mk" "$TLSM_TOP/attach" "$TLSM_TOP/preload" "$TLSM_TOP/analyzer" \
    "$TLSM_TOP/common" "$src/"
cp -a "$TLSM_TOP/tests/progs" "$TLSM_TOP/tests/fuzz" "$src/tests/"
# The fuzz target (clang with libFuzzer) is one compile of all the reader's sources with the
# sanitizers, ~15 s of CPU each time it is rebuilt: beside busy processes the rebuilds after
# every touch below took this case past its 10 minute bound. So it is built once, at the end,
# and its dependencies are checked there with `make -n` only.
goals=(all testprogs)
# Not the calling make's flags or variables (make check SAN=... O=...): a build of its own.
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$src" --no-print-directory O=b SAN= "$@"; }

if ! mk -j2 "${goals[@]}" >"$d/build.log" 2>&1; then
    fail "build-deps: the scratch build failed: $(tail -n 3 "$d/build.log" | tr '\n' ' ')"
    exit 0
fi
check "build-deps: a fresh build is up to date (make -q)" mk -q "${goals[@]}"

# users FILE: the outputs that must be rebuilt when FILE changes, one per line, sorted.
users() {
    python3 - "$src" "$1" "${goals[@]}" <<'EOF'
import os, re, sys
src, touched, goals = sys.argv[1], sys.argv[2], sys.argv[3:]
inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
def reads(path, seen):
    """Every file path (relative to src) that compiling path reads through #include "..."."""
    if path in seen:
        return seen
    seen.add(path)
    text = open(os.path.join(src, path)).read()
    for name in inc.findall(text):
        # the preload compiles with -Ipreload, the analyzer and the fuzz target with -Ianalyzer,
        # both with -I. (for "common/schema.h")
        for base in (os.path.dirname(path), 'preload', 'analyzer', '.'):
            cand = os.path.normpath(os.path.join(base, name))
            if os.path.exists(os.path.join(src, cand)):
                reads(cand, seen)
                break
    return seen
def sources(folder, recurse=True):
    out = []
    for dirpath, _, names in os.walk(os.path.join(src, folder)):
        out += [os.path.relpath(os.path.join(dirpath, f), src) for f in names if f.endswith('.c')]
        if not recurse:
            break
    # preload/arch/: only the build's architecture is compiled
    arch = os.uname().machine
    return sorted(c for c in out if not c.startswith(('preload/arch/', 'attach/arch/')) or
                  c.startswith(('preload/arch/' + arch + '/', 'attach/arch/' + arch + '.c')))
out = set()
for c in sources('preload'):
    if touched in reads(c, set()):
        # both builds of the preload: libtlsmeter.so and the attach build (mk/attachlib.mk)
        out |= {'b/' + c[:-2] + '.o', 'b/libtlsmeter.so', 'b/attach-lib/' + c[:-2] + '.o',
                'b/libtlsmeter-attach.so'}
for c in sources('attach'):
    if touched in reads(c, set()):
        out |= {'b/' + c[:-2] + '.o', 'b/tlsmeter-attach'}
for c in sources('analyzer'):
    if touched in reads(c, set()):
        out |= {'b/' + c[:-2] + '.o', 'b/tlsmeter-analyze'}
for c in sources('tests/progs', False):
    if touched in reads(c, set()):
        out.add('b/tests/' + os.path.basename(c)[:-2])
if 'b/fuzz/fuzz-reader' in goals:
    fz = [c for c in sources('analyzer') if c != 'analyzer/main.c'] + ['tests/fuzz/fuzz_reader.c']
    if any(touched in reads(c, set()) for c in fz):
        out.add('b/fuzz/fuzz-reader')
print('\n'.join(sorted(out)))
EOF
}

# rebuilt FILE: touch FILE, list what `make -n` would build (each compile and link names its
# output with -o), then really rebuild so the next check starts from an up-to-date tree.
rebuilt() {
    touch "$src/$1"
    mk -n V=1 "${goals[@]}" | grep -o ' -o [^ ]*' | sed 's/^ -o //' | sort -u
    mk "${goals[@]}" >>"$d/build.log" 2>&1
}

# check_touch FILE WHAT: exactly FILE's users are rebuilt; WHAT names the expectation.
check_touch() {
    local want got
    want=$(users "$1")
    got=$(rebuilt "$1")
    if [ -z "$want" ]; then
        fail "build-deps $1: nothing includes it (the test's own include scan is wrong)"
    elif [ "$want" = "$got" ]; then
        pass "build-deps $1: rebuilds exactly $2 ($(echo "$want" | wc -l) outputs)"
    else
        fail "build-deps $1: want [$(echo "$want" | tr '\n' ' ')] got [$(echo "$got" | tr '\n' ' ')]"
    fi
}

check_touch preload/base/hooks.def "the preload objects that include it, and the library"
# The schema: the preload and analyzer objects that include common/schema.h, not the others.
n_pre=$(users common/schema.def | grep -c '^b/preload/.*\.o$')
n_ana=$(users common/schema.def | grep -c '^b/analyzer/.*\.o$')
n_pre_all=$(find "$src/preload" -name '*.c' | wc -l)
if [ "$n_pre" -eq 0 ] || [ "$n_ana" -eq 0 ] || [ "$n_pre" -ge "$n_pre_all" ]; then
    fail "build-deps: common/schema.def has $n_pre of $n_pre_all preload users and $n_ana analyzer users (want some of each, not all of the preload)"
else
    check_touch common/schema.def "the $n_pre preload and $n_ana analyzer objects that include it, both programs"
fi
# An analyzer header that only some analyzer files include: those, not the rest, not the preload.
hdr=analyzer/base/symbolize.h
n_users=$(users $hdr | grep -c '^b/analyzer/.*\.o$')
n_all=$(find "$src/analyzer" -name '*.c' | wc -l)
if [ "$n_users" -ge "$n_all" ] || [ "$n_users" -eq 0 ]; then
    fail "build-deps: $hdr is included by $n_users of $n_all analyzer files (pick another header)"
else
    check_touch $hdr "the $n_users of $n_all analyzer files that include it"
fi
check_touch tests/progs/tlsget.h "the test programs that include it"

# An object without its .d (built before -MMD, or the file lost) is rebuilt, not kept stale.
rm "$src/b/analyzer/base/hist.d"
got=$(mk -n V=1 "${goals[@]}" | grep -o ' -o [^ ]*' | sed 's/^ -o //' | sort -u | tr '\n' ' ')
if [ "$got" = "b/analyzer/base/hist.o b/tlsmeter-analyze " ]; then
    pass "build-deps: an object whose .d is missing is rebuilt (and only it)"
else
    fail "build-deps: hist.d removed: want [b/analyzer/base/hist.o b/tlsmeter-analyze] got [$got]"
fi
mk "${goals[@]}" >>"$d/build.log" 2>&1

# -MP: a header that no longer exists (and is no longer included) must not stop the build.
printf '/* scratch.h: build-deps probe */\n' >"$src/analyzer/base/scratch.h"
sed -i '1a #include "base/scratch.h"' "$src/analyzer/base/hist.c"
mk "${goals[@]}" >>"$d/build.log" 2>&1
rm "$src/analyzer/base/scratch.h"
sed -i '/#include "base\/scratch.h"/d' "$src/analyzer/base/hist.c"
check "build-deps: a removed header does not break the build (-MP)" mk "${goals[@]}"

# The fuzz target: up to date once built; a test program's header leaves it alone, an analyzer
# header it includes rebuilds it (in that order: nothing is rebuilt between the two).
if ! command -v "${FUZZ_CC:-clang}" >/dev/null; then
    skip "build-deps fuzz target: ${FUZZ_CC:-clang} not installed"
elif ! mk b/fuzz/fuzz-reader >>"$d/build.log" 2>&1; then
    fail "build-deps: the fuzz target's build failed: $(tail -n 3 "$d/build.log" | tr '\n' ' ')"
else
    check "build-deps fuzz target: up to date once built (make -q)" mk -q b/fuzz/fuzz-reader
    goals+=(b/fuzz/fuzz-reader)
    for h in tests/progs/tlsget.h analyzer/base/symbolize.h; do
        want=$(users "$h" | grep '^b/fuzz/' | tr '\n' ' ')
        touch "$src/$h"
        got=$(mk -n V=1 b/fuzz/fuzz-reader | grep -o ' -o [^ ]*' | sed 's/^ -o //' | sort -u |
            tr '\n' ' ')
        if [ "$want" = "$got" ]; then
            pass "build-deps fuzz target, $h touched: rebuilds [${want% }]"
        else
            fail "build-deps fuzz target, $h touched: want [$want] got [$got]"
        fi
    done
fi

# A machine without the development packages (pkg-config finds none of them: PKG_CONFIG=false
# stands for that): a plain make stops before compiling anything, naming them and `make deps`.
out=$(mk O=bare PKG_CONFIG=false all 2>&1)
rc=$?
if [ "$rc" -ne 0 ] && [[ $out == *"libunwind"* && $out == *"make deps"* ]] &&
    [ -z "$(find "$src/bare" -name '*.o' 2>/dev/null)" ]; then
    pass "build-deps: without the development packages make stops first, naming them and make deps"
else
    fail "build-deps: without the development packages: exit $rc, $(echo "$out" | tail -n 2 | tr '\n' ' ')"
fi
rm -rf "$src"
