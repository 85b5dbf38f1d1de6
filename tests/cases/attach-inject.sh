#!/usr/bin/env bash
# attach-inject: tlsmeter-attach (attach/) loads a library into a running process with
# ptrace, calls it, lets the process go, and later calls it again to detach. The library here
# is a stand-in built in the case directory (it records each call in the file TLSMETER_OUT
# names and returns 0): this case tests the injector, not tlsmeter's tracing.
#  - 20 attach/detach cycles against attachee (threads blocked in epoll_wait, read, nanosleep,
#    poll, a condition variable, sigtimedwait) while SIGUSR1 arrives at a steady rate: no
#    EINTR, every signal delivered once, same output and exit code, same descriptors, a stop
#    time printed for each; a stopped process (SIGSTOP) stays stopped.
#  - the refusals: no such process, itself, already traced, another user, non-dumpable,
#    static, seccomp, zombie, no OpenSSL (libc only; GnuTLS), no thread in a safe system call,
#    the library's own refusal: each with its sentence and exit code, the process untouched.
# tlsm-arch: x86_64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
d=$(case_dir)
A=$O/tlsmeter-attach
T=$O/tests/attachee
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
declare -A TPID TFD
KILL=()
cleanup() {
    for p in "${TPID[@]}" "${KILL[@]}"; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$d"
}
trap cleanup EXIT

if [ ! -x "$A" ] || [ ! -x "$T" ]; then
    fail "attach-inject: $A or $T not built; run make all testprogs"
    exit 0
fi

# The stand-in library and the helper programs.
cat >"$d/standin.c" <<'EOF2'
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int tlsmeter_attach(const char *settings, char *msg, size_t cap);
int tlsmeter_detach(char *msg, size_t cap);
static char out[512];
static int attached;
static void record(const char *what)
{
    int fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        dprintf(fd, "%s %d\n", what, (int)getpid());
        close(fd);
    }
}
int tlsmeter_attach(const char *settings, char *msg, size_t cap)
{
    const char *o = strstr(settings, "TLSMETER_OUT=");
    size_t k = 0;
    if (strstr(settings, "TLSMETER_REFUSE=1\n")) {
        snprintf(msg, cap, "refused for the test");
        return 1;
    }
    if (attached) {
        snprintf(msg, cap, "already traced by tlsmeter");
        return 1;
    }
    for (o = o ? o + 13 : "/dev/null"; *o && *o != '\n' && k + 16 < sizeof(out); o++) {
        if (o[0] == '%' && o[1] == 'p') {
            k += snprintf(out + k, sizeof(out) - k, "%d", (int)getpid());
            o++;
        } else {
            out[k++] = *o;
        }
    }
    out[k] = 0;
    record(strstr(settings, "TLSMETER_CASE=environment\n") ? "attach env" : "attach");
    attached = 1;
    return 0;
}
int tlsmeter_detach(char *msg, size_t cap)
{
    if (!attached) {
        snprintf(msg, cap, "not attached");
        return 1;
    }
    record("detach");
    attached = 0;
    return 0;
}
EOF2
cat >"$d/plain.c" <<'EOF2'
#include <stdio.h>
#include <unistd.h>
int main(void)
{
    char c;
    printf("plain ready\n");
    fflush(stdout);
    while (read(0, &c, 1) > 0)
        ;
    printf("plain done\n");
    return 5;
}
EOF2
cat >"$d/gnutls.c" <<'EOF2'
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <unistd.h>
int main(void)
{
    char c;
    gnutls_global_init();
    printf("plain ready\n");
    fflush(stdout);
    while (read(0, &c, 1) > 0)
        ;
    printf("plain done\n");
    return 5;
}
EOF2
# SIGUSR1 at a steady rate, the next one only once the last was taken (standard signals do
# not queue: two pending ones would count as one, whoever stopped the process).
cat >"$d/sender.py" <<'EOF2'
import os, signal, sys, time
pid, stop = int(sys.argv[1]), sys.argv[2]
def pending():
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(("ShdPnd:", "SigPnd:")) and int(line.split()[1], 16) & (1 << 9):
                return True
    return False
n = 0
while not os.path.exists(stop):
    os.kill(pid, signal.SIGUSR1)
    n += 1
    time.sleep(0.002)
    while pending():
        time.sleep(0.0005)
print(n)
EOF2
LIB=$d/libtlsmeter-attach.so
if ! cc -shared -fPIC -o "$LIB" "$d/standin.c" || ! cc -o "$d/plain" "$d/plain.c"; then
    fail "attach-inject: cannot build the stand-in library or the libc-only program"
    exit 0
fi

# start NAME CMD...: CMD in the background, stdin a fifo we hold open, until "ready".
start() {
    local name=$1 fd
    shift
    rm -f "$d/$name.in" && mkfifo "$d/$name.in"
    "$@" <"$d/$name.in" >"$d/$name.out" 2>&1 &
    TPID[$name]=$!
    exec {fd}>"$d/$name.in"
    TFD[$name]=$fd
    for _ in $(seq 100); do
        grep -q ready "$d/$name.out" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

# finish NAME: close its stdin, its exit code in RC, its output in OUT.
finish() {
    local name=$1 fd=${TFD[$1]}
    exec {fd}>&-
    wait "${TPID[$name]}"
    RC=$?
    OUT=$(tr '\n' ' ' <"$d/$name.out")
    unset "TPID[$name]"
}

nfds() {
    local f n=0
    for f in /proc/"$1"/fd/*; do n=$((n + 1)); done
    echo "$n"
}
state() { awk '/^State:/ {print $2}' "/proc/$1/status" 2>/dev/null; }
tracer() { awk '/^TracerPid:/ {print $2}' "/proc/$1/status" 2>/dev/null; }
clean_out() { echo "ready eintr epoll=0 read=0 nanosleep=0 poll=0 cond=0 sigwait=0 main=0 sigusr1=$1 "; }

# refused NAME RC PATTERN PID [PREFIX...]: --check and an attach both refuse with exit RC and
# a message matching PATTERN, and the process is left running, untraced by us.
refused() {
    local name=$1 want=$2 pat=$3 pid=$4 out rc st
    shift 4
    for mode in ${MODES:---check attach}; do
        if [ "$mode" = --check ]; then
            out=$("$@" "$A" --check "$pid" 2>&1)
        else
            out=$("$@" "$A" --lib "${RLIB:-$LIB}" --for 0 "$pid" 2>&1)
        fi
        rc=$?
        st=$(state "$pid")
        if [ "$rc" != "$want" ] || ! [[ $out =~ $pat ]]; then
            fail "attach-inject refuse $name ($mode): exit $rc (want $want), said: $out"
            return 1
        fi
        if [ -n "$st" ] && [ "$st" != S ] && [ "$st" != R ] && [ "$st" != Z ]; then
            fail "attach-inject refuse $name ($mode): the process is left in state $st"
            return 1
        fi
    done
    pass "attach-inject refuse $name: exit $want, '${out#tlsmeter: }'"
}

# --- Control: the same run without tlsmeter-attach.
start ctl "$T" -t epoll,read,nanosleep,poll,cond,sigwait -x 7 || fail "attach-inject: attachee never got ready"
rm -f "$d/stop"
python3 "$d/sender.py" "${TPID[ctl]}" "$d/stop" >"$d/ctl.sent" &
sleep 1
touch "$d/stop"
wait $!
sent=$(cat "$d/ctl.sent")
finish ctl
if [ "$RC" = 7 ] && [ "$OUT" = "$(clean_out "$sent")" ]; then
    pass "attach-inject control: attachee alone: exit 7, $sent SIGUSR1 counted, no EINTR"
else
    fail "attach-inject control: exit $RC, output '$OUT' for $sent signals sent"
fi

# --- 20 attach/detach cycles under a steady SIGUSR1 stream.
start cyc "$T" -t epoll,read,nanosleep,poll,cond,sigwait -x 7 || fail "attach-inject: attachee never got ready"
pid=${TPID[cyc]}
fds_before=$(nfds "$pid")
rm -f "$d/stop"
python3 "$d/sender.py" "$pid" "$d/stop" >"$d/cyc.sent" &
sender=$!
bad=0
for _ in $(seq 20); do
    TLSMETER_CASE=environment "$A" --lib "$LIB" -o "$d/cyc.%p.rec" --for 0.05 "$pid" 2>>"$d/cyc.log" || bad=$((bad + 1))
done
touch "$d/stop"
wait $sender
sent=$(cat "$d/cyc.sent")
fds_after=$(nfds "$pid")
st=$(state "$pid") tr=$(tracer "$pid")
maps=$(grep -c "$LIB" "/proc/$pid/maps")
finish cyc
rec=$d/cyc.$pid.rec
na=$(grep -c "^attach env $pid\$" "$rec" 2>/dev/null) nd=$(grep -c "^detach $pid\$" "$rec" 2>/dev/null)
mapfile -t stops < <(sed -n 's/.*stopped for \([0-9.]*\) ms.*/\1/p' "$d/cyc.log")
if [ "$bad" = 0 ] && [ "$na" = 20 ] && [ "$nd" = 20 ]; then
    pass "attach-inject cycles: 20 attach + 20 detach, each called the library once (settings from -o and the environment arrived)"
else
    fail "attach-inject cycles: $bad runs failed, the library saw $na attach and $nd detach calls: $(tail -n 3 "$d/cyc.log" | tr '\n' ' ')"
fi
if [ "$RC" = 7 ] && [ "$OUT" = "$(clean_out "$sent")" ]; then
    pass "attach-inject cycles: no EINTR in any thread, all $sent SIGUSR1 delivered once, exit 7 as without tlsmeter"
else
    fail "attach-inject cycles: exit $RC, output '$OUT' for $sent signals sent"
fi
if [ "$fds_before" = "$fds_after" ] && [ "$st" = S ] && [ "$tr" = 0 ]; then
    pass "attach-inject cycles: $fds_after descriptors before and after, state S, no tracer left, the library mapped once ($maps mappings)"
else
    fail "attach-inject cycles: descriptors $fds_before -> $fds_after, state $st, TracerPid $tr"
fi
if [ "${#stops[@]}" = 40 ]; then
    sorted=$(printf '%s\n' "${stops[@]}" | sort -g)
    med=$(echo "$sorted" | sed -n 20p) max=$(echo "$sorted" | tail -n 1)
    if awk -v m="$med" 'BEGIN { exit !(m <= 50) }'; then
        pass "attach-inject stop times: 40 printed, median $med ms, max $max ms (7 threads)"
    else
        fail "attach-inject stop times: median $med ms over 50 ms (max $max ms)"
    fi
else
    fail "attach-inject stop times: ${#stops[@]} of 40 lines say how long the process was stopped"
fi

# --- A stopped process stays stopped; the library's refusal is reported with exit 1.
# (Not epoll_wait: a SIGSTOP makes it return EINTR, with or without tlsmeter.)
start stp "$T" -t read,poll -x 3 || fail "attach-inject: attachee never got ready"
pid=${TPID[stp]}
kill -STOP "$pid"
sleep 0.1
out=$("$A" --lib "$LIB" -o "$d/stp.rec" --for 0 "$pid" 2>&1)
rc=$? st=$(state "$pid")
kill -CONT "$pid"
if [ "$rc" = 0 ] && [ "$st" = T ]; then
    pass "attach-inject stopped process: attached and detached, left stopped (state T) as it was"
else
    fail "attach-inject stopped process: exit $rc, state $st afterwards: $out"
fi
out=$("$A" --lib "$LIB" --set TLSMETER_REFUSE=1 --for 0 "$pid" 2>&1)
rc=$?
if [ "$rc" = 1 ] && [[ $out == "tlsmeter: cannot attach to $pid: refused for the test" ]]; then
    pass "attach-inject library refusal: exit 1 with its message"
else
    fail "attach-inject library refusal: exit $rc: $out"
fi
out=$("$A" --lib "$LIB" --set OUT=x "$pid" 2>&1)
rc=$?
if [ "$rc" = 2 ]; then
    pass "attach-inject usage: --set OUT=x (not TLSMETER_*) is refused, exit 2"
else
    fail "attach-inject usage: --set OUT=x gave exit $rc: $out"
fi
finish stp
if [ "$RC" = 3 ] && [ "$OUT" = "$(clean_out 0)" ]; then
    pass "attach-inject stopped process: output and exit code unchanged"
else
    fail "attach-inject stopped process: exit $RC, output '$OUT'"
fi

# --- A process in its own mount namespace (as in a container) that cannot see the library:
# a copy goes to its /tmp/tlsmeter-UID/, the trace to its /tmp; a symbolic link planted there
# is refused.
if unshare -m --propagation private true 2>/dev/null; then
    mkdir -p "$d/nslib" && cp "$LIB" "$d/nslib/"
    # shellcheck disable=SC2016 # expanded by the inner bash
    inner='mount -t tmpfs none /tmp && mount -t tmpfs none "$1" && exec "$2" -t read,epoll'
    start ns unshare -m --propagation private bash -c "$inner" _ "$d/nslib" "$T" ||
        fail "attach-inject: attachee never got ready"
    pid=${TPID[ns]}
    out=$("$A" --lib "$d/nslib/libtlsmeter-attach.so" --for 0.05 "$pid" 2>&1)
    rc=$?
    rec=/proc/$pid/root/tmp/tlsmeter.$pid.%t.trace # the stand-in expands %p only
    mode=$(stat -c %a "/proc/$pid/root/tmp/tlsmeter-0/libtlsmeter-attach.so" 2>/dev/null)
    if [ "$rc" = 0 ] && [[ $out == *"trace $rec;"* ]] && [ "$(cat "$rec" 2>/dev/null)" = "attach $pid
detach $pid" ] && [ "$mode" = 644 ] && grep -q ' /tmp/tlsmeter-0/libtlsmeter-attach.so$' "/proc/$pid/maps"; then
        pass "attach-inject mount namespace: the library copied to the process's /tmp/tlsmeter-0 (mode $mode), the trace in its /tmp, named from here as $rec"
    else
        fail "attach-inject mount namespace: exit $rc, copy mode '$mode', record '$(cat "$rec" 2>/dev/null)': $out"
    fi
    finish ns
    start ns2 unshare -m --propagation private bash -c "$inner" _ "$d/nslib" "$T" ||
        fail "attach-inject: attachee never got ready"
    ln -s /etc "/proc/${TPID[ns2]}/root/tmp/tlsmeter-0"
    RLIB=$d/nslib/libtlsmeter-attach.so
    MODES=attach refused "symbolic link in the target's /tmp" 2 "/tmp/tlsmeter-0 in the target's root is not a directory we can use: a symbolic link" "${TPID[ns2]}"
    RLIB=
    finish ns2
else
    skip "attach-inject mount namespace: unshare -m is not allowed here"
fi

# --- Refusals.
bash -c 'echo $$' >"$d/gone.pid"
refused "no such process" 2 "there is no process" "$(cat "$d/gone.pid")"
out=$(sh -c 'exec "$0" --check $$' "$A" 2>&1)
rc=$?
if [ "$rc" = 2 ] && [[ $out == *"is tlsmeter-attach itself"* ]]; then
    pass "attach-inject refuse itself: exit 2, '$out'"
else
    fail "attach-inject refuse itself: exit $rc: $out"
fi
start fresh "$T" -t read || fail "attach-inject: attachee never got ready"
out=$("$A" --detach "${TPID[fresh]}" 2>&1)
rc=$?
if [ "$rc" = 2 ] && [[ $out == *"not loaded"* ]]; then
    pass "attach-inject --detach of a process never attached: exit 2"
else
    fail "attach-inject --detach of a process never attached: $out"
fi
finish fresh

if command -v strace >/dev/null; then
    start trc "$T" -t read || fail "attach-inject: attachee never got ready"
    strace -p "${TPID[trc]}" -o /dev/null 2>/dev/null &
    spid=$!
    KILL+=("$spid")
    for _ in $(seq 100); do [ "$(tracer "${TPID[trc]}")" = 0 ] || break; sleep 0.05; done
    refused "already traced" 2 "already traced by $spid \(strace\)" "${TPID[trc]}"
    kill "$spid"
    wait "$spid" 2>/dev/null
    finish trc
    if [ "$OUT" = "$(clean_out 0)" ]; then
        pass "attach-inject refuse already traced: the process's output is unchanged"
    else
        fail "attach-inject refuse already traced: output '$OUT'"
    fi
else
    skip "attach-inject refuse already traced: strace is not installed"
fi

# Another user's process, and a non-dumpable one of the same user: tlsmeter-attach as nobody.
u=$(mktemp -d /tmp/tlsm-attach.XXXXXX)
chmod 755 "$u"
cp "$A" "$LIB" "$u/"
RLIB=$u/libtlsmeter-attach.so
start root "$T" -t read || fail "attach-inject: attachee never got ready"
refused "another user" 2 "runs as root and you are nobody" "${TPID[root]}" "${NOBODY[@]}"
finish root
start nbd "${NOBODY[@]}" "$T" -t read || fail "attach-inject: attachee never got ready"
if out=$("${NOBODY[@]}" "$u/tlsmeter-attach" --check "${TPID[nbd]}" 2>&1); then
    pass "attach-inject nobody's own process: --check says it can be attached"
else
    fail "attach-inject nobody's own process: --check refused: $out"
fi
finish nbd
start dmp "${NOBODY[@]}" "$T" -t read -D || fail "attach-inject: attachee never got ready"
A=$u/tlsmeter-attach refused "non-dumpable" 2 "is not dumpable" "${TPID[dmp]}" "${NOBODY[@]}"
finish dmp
if [ "$OUT" = "$(clean_out 0)" ]; then
    pass "attach-inject refuse non-dumpable: the process's output is unchanged"
else
    fail "attach-inject refuse non-dumpable: output '$OUT'"
fi
RLIB=
rm -rf "$u"

if cc -static -o "$d/static" "$d/plain.c" 2>/dev/null; then
    start static "$d/static" || fail "attach-inject: the static program never got ready"
    refused static 2 "is a static executable" "${TPID[static]}"
    finish static
    if [ "$RC" = 5 ] && [ "$OUT" = "plain ready plain done " ]; then
        pass "attach-inject refuse static: the program's output and exit code are unchanged"
    else
        fail "attach-inject refuse static: exit $RC, output '$OUT'"
    fi
else
    skip "attach-inject refuse static: no static libc (libc6-dev's libc.a)"
fi

start scmp "$T" -t read -S || fail "attach-inject: attachee never got ready"
refused seccomp 2 "runs under seccomp \(a filter, mode 2\)" "${TPID[scmp]}"
finish scmp

bash -c 'sleep 0 & echo $! >"$1"; exec sleep 3' _ "$d/zombie.pid" &
KILL+=($!)
sleep 0.5
refused zombie 2 "has exited \(a zombie" "$(cat "$d/zombie.pid")"

start plain "$d/plain" || fail "attach-inject: the libc-only program never got ready"
refused "no OpenSSL" 2 "has no OpenSSL .*: no TLS library is loaded" "${TPID[plain]}"
finish plain
if [ "$RC" = 5 ] && [ "$OUT" = "plain ready plain done " ]; then
    pass "attach-inject refuse no OpenSSL: the program's output and exit code are unchanged"
else
    fail "attach-inject refuse no OpenSSL: exit $RC, output '$OUT'"
fi
if cc -o "$d/gnutls" "$d/gnutls.c" -lgnutls 2>/dev/null; then
    start gnutls "$d/gnutls" || fail "attach-inject: the GnuTLS program never got ready"
    refused "GnuTLS" 2 "has no OpenSSL .*: it uses GnuTLS, which tlsmeter does not measure" "${TPID[gnutls]}"
    finish gnutls
else
    skip "attach-inject refuse GnuTLS: libgnutls-dev is not installed"
fi

# No thread waits in a system call (the main thread spins): tried for about 3 s, exit 1.
start busy "$T" -b || fail "attach-inject: attachee never got ready"
pid=${TPID[busy]} t0=$SECONDS
out=$("$A" --lib "$LIB" --for 0 "$pid" 2>&1)
rc=$? st=$(state "$pid") tr=$(tracer "$pid")
kill -TERM "$pid"
finish busy
if [ "$rc" = 1 ] && [[ $out == *"no thread of $pid waited in a system call where loading tlsmeter is safe"* ]] &&
    [ "$st" = R ] && [ "$tr" = 0 ] && [ "$OUT" = "$(clean_out 0)" ]; then
    pass "attach-inject busy process: no safe thread, refused after $((SECONDS - t0)) s with exit 1, left running untouched"
else
    fail "attach-inject busy process: exit $rc, state $st, tracer $tr, output '$OUT': $out"
fi
