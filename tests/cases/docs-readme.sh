#!/usr/bin/env bash
# docs-readme: README.md is a manual whose commands work. (a) It is under 300 lines. (b) Every
# shell block carries a readme-test marker (tests/tools/readme_blocks.py): the commands of `run`
# blocks run in README order in a scratch copy of the source tree's top (build -> $O, scripts),
# against a 4 MiB file on a loopback openssl s_server, each to exit 0; `syntax-only` blocks
# (servers, boards, systemctl) pass bash -n; the systemd drop-in is parsed and given to
# systemd-analyze verify beside a stand-in unit. (c) The example report is the live output of
# the command its comment names (tests/tools/readme-example --check; without --check that tool
# rewrites it). The checkers themselves are tried on a README with a block that has no marker
# and an example that is off by one line.
#
# What the README's variables are here (the README says what they stand for): VENDOR_LIB, the
# libcrypto the stand-in program (curl) loads; URL, the 4 MiB file on the loopback server;
# CURL_CA_BUNDLE, the case's certificate, so curl trusts that server. A `make` command is run as
# `make -n -C TOP O=$O ...` (a dry run: the target exists and the Makefile takes it; this case
# is part of make check, and core-scripts runs the demo).
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload docs-readme
tls_analyzer docs-readme
README=$TLSM_TOP/README.md
BLOCKS=$TLSM_TOOLS/readme_blocks.py
EXAMPLE=$TLSM_TOOLS/readme-example
N=docs-readme

# (a) The length a newcomer reads in ten minutes.
lines=$(wc -l <"$README")
if [ "$lines" -lt 300 ]; then
    pass "$N: README.md has $lines lines (< 300)"
else
    fail "$N: README.md has $lines lines, the limit is 299: move details to docs/"
fi

# (c) The example report against the live output.
tls_check "$N: the example report is the live output of its command" \
    env O="$O" "$TLSM_PY" "$EXAMPLE" --check "$README"

# The checkers refuse what they must refuse.
mkdir -p "$d/self"
{
    # shellcheck disable=SC2016 # backquotes of Markdown fences, not a command substitution
    printf '# x\n\n```sh\necho unmarked\n```\n\n<!-- readme-test: run -->\n```sh\ntrue\n```\n'
    sed -n '/^<!-- example-report:/,/^```$/p' "$README" | sed '3s/^/x/'
} >"$d/self/README.md"
if "$TLSM_PY" "$BLOCKS" "$d/self/README.md" "$d/self/b" >"$d/self/blocks" 2>&1 ||
    ! grep -q "^error	3	" "$d/self/blocks"; then
    fail "$N: a block without a marker was not refused: $(tr '\n\t' '  ' <"$d/self/blocks")"
elif ! out=$(env O="$O" "$TLSM_PY" "$EXAMPLE" --check "$d/self/README.md" 2>&1) &&
    [[ $out == *"(line 1 of the block)"* ]]; then
    pass "$N: the checkers refuse an unmarked block and name an example's first wrong line"
else
    fail "$N: readme-example --check on an off-by-one example said: $out"
fi

# (b) The blocks.
mkdir -p "$d/blocks"
if ! "$TLSM_PY" "$BLOCKS" "$README" "$d/blocks" >"$d/blocks/list" 2>"$d/blocks/err"; then
    while IFS=$'\t' read -r kind line text; do
        [ "$kind" = error ] && fail "$N: README.md line $line: $text"
    done <"$d/blocks/list"
    [ -s "$d/blocks/err" ] && fail "$N: readme_blocks.py: $(tail -n 2 "$d/blocks/err")"
fi

# The scratch top of the tree the commands run in, and what they stand on.
top=$d/top
mkdir -p "$top"
ln -s "$O" "$top/build"
ln -s "$TLSM_TOP/scripts" "$top/scripts"
TLSMETER_HELP=1 TLSMETER_DISABLE=1 run_traced /bin/true 2>"$d/help.txt"
runnable=
if ! tls_curl_ok; then
    why=$TLS_CURL_SKIP
elif ! tls_make_file image.bin $((4 * 1024 * 1024)) ||
    ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    why="openssl s_server did not start"
    fail "$N: $why"
else
    runnable=1
    VENDOR_LIB=$(ldd "$(command -v curl)" | awk '$1 ~ /^libcrypto\.so/ {print $3; exit}')
    URL=https://127.0.0.1:$TLS_PORT/image.bin
fi

# run_cmd LINE FILE: one README command in the scratch top, with the README's variables.
run_cmd() {
    local line=$1 cmd rc short
    cmd=$(cat "$2")
    short=$(head -n 1 "$2" | cut -c1-90)
    if [[ $cmd == make\ * ]]; then
        cmd="make -n -C '$TLSM_TOP' O='$O' ${cmd#make }"
    fi
    (cd "$top" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL VENDOR_LIB="$VENDOR_LIB" URL="$URL" \
        CURL_CA_BUNDLE="$TLS_CERT" timeout -k 5 90 bash -o pipefail -u -c "$cmd") \
        </dev/null >"$2.out" 2>"$2.err"
    rc=$?
    if [ "$rc" -eq 0 ]; then
        pass "$N: README.md line $line runs: $short"
    else
        fail "$N: README.md line $line exited $rc: $short: $(grep -v '^$' "$2.err" | tail -n 2 | tr '\n' ' ')"
    fi
}

while IFS=$'\t' read -r kind line file unit; do
    case $kind in
    run)
        if [ -n "$runnable" ]; then
            run_cmd "$line" "$file"
        else
            check "$N: README.md line $line parses (not run: $why)" bash -n "$file"
        fi
        ;;
    syntax)
        check "$N: README.md line $line (syntax-only block) parses" bash -n "$file"
        ;;
    dropin)
        units=$d/units
        mkdir -p "$units/$unit.d"
        printf '[Unit]\nDescription=stand-in for the README drop-in\n[Service]\nExecStart=/bin/true\n' \
            >"$units/$unit"
        cp "$file" "$units/$unit.d/tlsmeter.conf"
        check "$N: README.md line $line: the drop-in for $unit sets what tlsmeter needs" \
            "$TLSM_PY" "$BLOCKS" --drop-in "$file" "$unit" "$d/help.txt"
        if command -v systemd-analyze >/dev/null; then
            timeout -k 5 60 systemd-analyze verify "$units/$unit" </dev/null >"$d/verify.out" 2>&1
            rc=$?
            if [ "$rc" -eq 0 ] && ! grep -q 'tlsmeter.conf' "$d/verify.out"; then
                pass "$N: README.md line $line: systemd-analyze verify takes the drop-in"
            else
                fail "$N: README.md line $line: systemd-analyze verify (exit $rc): $(tail -n 3 "$d/verify.out" | tr '\n' ' ')"
            fi
        else
            skip "$N: README.md line $line: no systemd-analyze here (the drop-in was parsed only)"
        fi
        ;;
    esac
done <"$d/blocks/list"
tls_server_stop
