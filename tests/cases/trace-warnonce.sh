#!/usr/bin/env bash
# trace-warnonce: a process tree whose children all fail the same way prints the warning
# once on stderr, not once per process: a traced shell runs 5 Python downloads whose trace
# cannot be created (its directory does not exist); all 5 succeed, stderr has exactly one
# tlsmeter line, and the tree's marker directory is gone after the run. A second tree (a
# new run) prints it again. The children never see the tree's token in their environment.
# tlsm-arch: x86_64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload trace-warnonce
if under_qemu; then
    skip "trace-warnonce: needs the host's python and sh (not under qemu)"
    exit 0
fi
tls_make_file f.bin 50000
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "trace-warnonce: openssl s_server did not start"
    exit 0
fi
cat >"$d/five.sh" <<EOF2
echo "root=\$\$"
ok=0
for i in 1 2 3 4 5; do
    "$TLSM_PY" "$TLSM_TOOLS/pyclient.py" --port "$TLS_PORT" --cafile "$TLS_CERT" --path /f.bin \
        --out "$d/body.\$i" >/dev/null && [ "\$(wc -c <"$d/body.\$i")" = 50000 ] && ok=\$((ok + 1))
done
echo "ok=\$ok"
EOF2
left=""
for run in 1 2; do
    tls_run "$d/run$run" "$d/nodir/t.%p.jsonl" sh "$d/five.sh"
    n=$(grep -c '^tlsmeter:' "$d/run$run.err")
    if [ "$(cat "$d/run$run.rc")" = 0 ] && grep -q '^ok=5$' "$d/run$run.out" && [ "$n" = 1 ] &&
        grep -q '^tlsmeter: cannot create trace .*nodir' "$d/run$run.err"; then
        pass "trace-warnonce run $run: 5 children failing alike, 5 downloads done, one warning on stderr"
    else
        fail "trace-warnonce run $run: exit $(cat "$d/run$run.rc"), $(cat "$d/run$run.out"), $n tlsmeter lines: $(head -c 400 "$d/run$run.err")"
    fi
    # The tree's root is the shell (the first preloaded process): its pid starts the token.
    root=$(sed -n 's/^root=//p' "$d/run$run.out")
    for m in /dev/shm/tlsmeter-warned."$(id -u)"."$root".* /tmp/tlsmeter-warned."$(id -u)"."$root".*; do
        [ -e "$m" ] && left="$left $m"
    done
done
if [ -z "$left" ]; then
    pass "trace-warnonce: the trees' marker directories are removed at the root's exit"
else
    fail "trace-warnonce: marker directories left:$left"
fi
# The token travels in the environment of the exec'd children only up to their constructor.
tls_run "$d/env" "$d/nodir/t.%p.jsonl" sh -c 'sh -c env; env | wc -l'
tls_run "$d/env0" "" sh -c 'sh -c env; env | wc -l'
if [ "$(cat "$d/env.rc")" = 0 ] && ! grep -q TLSMETER_TREE "$d/env.out" &&
    [ "$(grep -vc '^LD_PRELOAD=\|^TLSMETER_OUT=' "$d/env.out")" = "$(grep -vc '^LD_PRELOAD=\|^TLSMETER_OUT=' "$d/env0.out")" ]; then
    pass "trace-warnonce: the children's environment is the one they were given (no TLSMETER_TREE)"
else
    fail "trace-warnonce: the children see: $(grep TLSMETER_ "$d/env.out" | head -3)"
fi
