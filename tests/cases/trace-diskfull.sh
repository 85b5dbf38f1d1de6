#!/usr/bin/env bash
# trace-diskfull: the trace's filesystem fills up part way (a 768 KiB tmpfs, a download whose
# trace needs more; for format 2, whose trace is a third of that, 384 KiB): the program is unharmed (same output, exit 0, no SIGBUS from a mapped
# page), the trace holds whole lines only, its end line names the error (io_error) and
# counts the dropped events (and their bytes), stderr has one warning, and the analyzer's
# report says the disk was full and how much was dropped. Full from the start: no file left,
# one warning. Needs root (mount).
# tlsm-arch: x86_64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload trace-diskfull
if under_qemu || [ "$(id -u)" != 0 ]; then
    skip "trace-diskfull: needs root on the host (mounts a small tmpfs)"
    exit 0
fi
mnt=$d/small
mkdir -p "$mnt"
if ! mount -t tmpfs -o size=768k,mode=0755 tmpfs "$mnt" 2>"$d/mount.err"; then
    skip "trace-diskfull: cannot mount a tmpfs here: $(head -c 200 "$d/mount.err")"
    exit 0
fi
TLS_EXTRA_CLEANUP="umount '$mnt' 2>/dev/null"
tls_make_file big.bin $((48 * 1024 * 1024))
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "trace-diskfull: openssl s_server did not start"
    exit 0
fi

# part_way MNT NAME [VAR=VALUE...]: a download whose trace does not fit MNT. Format 1: about
# 1.2 MB of trace into 768 KiB; format 2 (a third of the bytes) into a 384 KiB tmpfs. The
# trace is checked in its JSON Lines form (format 2: tlsmeter-analyze --jsonl).
part_way() {
    local mnt=$1 name="trace-diskfull part way${2:+ ($2)}" f
    shift 2
    TLS_ENV=("$@") TLS_KEEP_FORMAT=1 # no JSON Lines copy on the full disk: see below
    tls_client py "$TLS_PORT" big.bin "$d/full" "$mnt/t.%p.jsonl"
    TLS_ENV=() TLS_KEEP_FORMAT=
    tls_traces "$mnt/t.*.jsonl"
    if [ "$(cat "$d/full.rc")" != 0 ] || [ "$(tls_size "$d/full.body" 2>/dev/null)" != $((48 * 1024 * 1024)) ]; then
        fail "$name: the client failed (exit $(cat "$d/full.rc")): $(head -c 300 "$d/full.err")"
        return
    elif [ "${#TRACES[@]}" != 1 ]; then
        fail "$name: want one trace, found ${#TRACES[@]}"
        return
    fi
    f=${TRACES[0]}
    if [ "$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')" = 89544c53 ]; then
        "$O/tlsmeter-analyze" -q --jsonl "$f" >"$d/full.as-jsonl"
        f=$d/full.as-jsonl
    fi
    check "$name: whole lines, end names ENOSPC and counts the drops, one warning" \
        "$TLSM_PY" - "$f" "$d/full.err" <<'PY'
import json, sys
data = open(sys.argv[1], "rb").read()
assert b"\0" not in data, "NUL bytes left in the trace"
ev = [json.loads(l) for l in data.split(b"\n")[:-1]]
assert data.endswith(b"\n")
end = ev[-1]
assert end["ev"] == "end", "last line is %s" % end["ev"]
assert "No space left" in end.get("io_error", ""), end.get("io_error")
assert end["dropped"] > 0, end["dropped"]
assert any(e["ev"] == "read" for e in ev), "no read kept"
err = [l for l in open(sys.argv[2]) if l.startswith("tlsmeter:")]
assert len(err) == 1 and "No space left" in err[0], err
PY
    # The report says what happened: the disk was full, how much trace was lost; not "full
    # trace buffers", not "process killed".
    "$O/tlsmeter-analyze" "${TRACES[0]}" >"$d/full.report" 2>&1
    if grep -Eq "[0-9]+ events \([0-9.]+ [KMG]?i?B of trace\) were dropped: the trace's disk was full \(No space left on device\)" "$d/full.report" &&
        ! grep -Eq "full trace buffers|process killed|cut short" "$d/full.report"; then
        pass "$name: the report says the disk was full and how much was dropped"
    else
        fail "$name: the report does not name the full disk: $(grep -i "drop\|cut\|full" "$d/full.report" | head -c 400)"
    fi
    rm -f "$mnt"/t.*
}
part_way "$mnt" "format 1" TLSMETER_FORMAT=jsonl
mnt2=$d/small2
mkdir -p "$mnt2"
if mount -t tmpfs -o size=384k,mode=0755 tmpfs "$mnt2" 2>"$d/mount.err"; then
    TLS_EXTRA_CLEANUP="umount '$mnt' 2>/dev/null; umount '$mnt2' 2>/dev/null"
    part_way "$mnt2" "format 2"
    umount "$mnt2"
else
    fail "trace-diskfull part way (format 2): cannot mount a second tmpfs: $(head -c 200 "$d/mount.err")"
fi

# Full from the start: fill the filesystem, then trace.
head -c 2M /dev/zero >"$mnt/fill" 2>/dev/null
tls_client py "$TLS_PORT" big.bin "$d/zero" "$mnt/z.%p.jsonl"
tls_traces "$mnt/z.*"
if [ "$(cat "$d/zero.rc")" = 0 ] && [ "${#TRACES[@]}" = 0 ] &&
    [ "$(grep -c '^tlsmeter:.*No space left' "$d/zero.err")" = 1 ]; then
    pass "trace-diskfull from the start: no file left, one warning naming ENOSPC"
else
    fail "trace-diskfull from the start: exit $(cat "$d/zero.rc"), files ${TRACES[*]}, stderr: $(head -c 300 "$d/zero.err")"
fi
