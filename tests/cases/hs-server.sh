#!/usr/bin/env bash
# hs-server: the server side of handshakes. openssl s_server (RSA-2048 certificate) traced,
# driven by `openssl s_time -new` (a full TLS 1.3 handshake per connection): the server's
# parts are there, add up to no more than each handshake, and signature creation with the
# RSA-2048 key is the largest part; tickets issued are counted. Then `s_time -reuse` (TLS 1.2:
# s_time reads nothing after a handshake, so a TLS 1.3 ticket, sent after it, never reaches its
# session): the resumed handshakes are counted as resumed, sign nothing, and cost less than
# the full one (on-CPU time in the same trace: a ratio, no absolute time). The server runs
# without -www: with it, s_server drives the connection through libssl's own SSL BIO, whose
# calls into SSL_accept/SSL_read stay inside libssl where no preload reaches.
# tlsm-arch: x86_64 aarch64
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload hs-server
secs=2
under_qemu && secs=4

# listening PORT PID: bounded wait (10 s) for a listener on PORT while PID lives (-quiet, which
# keeps s_server from ending at its stdin's EOF, also keeps it from printing ACCEPT).
listening() {
    for _ in $(seq 200); do
        ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

# traced_server PREFIX PROTO: the target's s_server under the preload on a free port (TLS_PORT,
# SRV_PID); tls_cleanup stops it at exit if the case does not.
traced_server() {
    local p=$1 proto=$2 log port
    for _ in 1 2 3 4 5; do
        port=$(tls_free_port)
        log=$p.server.log
        bg_target LD_PRELOAD="$TLSM_PRELOAD" TLSMETER_OUT="$p.trace.%p.jsonl" openssl s_server \
            -accept "127.0.0.1:$port" -cert "$TLS_CERT" -key "$TLS_KEY" -quiet "$proto" \
            </dev/null >"$log" 2>&1
        SRV_PID=$!
        TLS_PIDS+=("$SRV_PID")
        if listening "$port" "$SRV_PID"; then
            TLS_PORT=$port
            return 0
        fi
        tls_stop_pid "$SRV_PID"
    done
    return 1
}

for mode in new reuse; do
    name="hs-server s_time -$mode"
    p=$d/$mode
    proto=-tls1_3
    [ "$mode" = reuse ] && proto=-tls1_2
    if ! traced_server "$p" "$proto"; then
        fail "$name: traced openssl s_server did not start ($(head -c 300 "$p.server.log"))"
        continue
    fi
    timeout -k 5 60 env -u LD_PRELOAD openssl s_time -connect "127.0.0.1:$TLS_PORT" "-$mode" \
        -time "$secs" -CAfile "$TLS_CERT" >"$p.stime" 2>&1
    echo "$?" >"$p.stime.rc"
    tls_stop_pid "$SRV_PID"
    tlsm_jsonl "$p.trace.%p.jsonl" # format 2 on disk; the checks read JSON Lines
    traces=("$p".trace.*.jsonl)
    if [ ! -f "${traces[0]}" ]; then
        fail "$name: no trace ($(head -c 300 "$p.server.log"))"
        continue
    fi
    run_target "$O/tlsmeter-analyze" --json "${traces[0]}" >"$p.json" 2>"$p.json.err"
    check "$name: server parts add up; $( [ $mode = new ] && echo "RSA-2048 signing is the largest part" || echo "resumed handshakes counted, sign nothing, cost less")" \
        "$TLSM_PY" - "${traces[0]}" "$p.json" "$mode" "$p.stime.rc" <<'PY'
import json, statistics, sys
trace, summ, mode, rc = sys.argv[1:5]
assert open(rc).read().strip() == "0", "s_time failed"
# The server was stopped by a signal: the mapped trace ends in unused (zero) space.
text = open(trace, "rb").read().replace(b"\0", b"").decode()
ev = [json.loads(l) for l in text.splitlines() if l.strip()]
opens = [e for e in ev if e["ev"] == "conn" and e.get("phase") == "open"]
assert len(opens) >= 3, ("connections", len(opens))
want = "TLSv1.3" if mode == "new" else "TLSv1.2"
assert all(c["role"] == "server" and c["proto"] == want for c in opens), opens[0]
for c in opens:
    hs = c["hs"]
    if not hs.get("preempt"):
        total = sum(p["ns"] for p in hs["parts"].values())
        assert total <= hs["ns"], ("parts exceed the handshake", c["conn"], total, hs["ns"])
    assert "key_schedule" in hs["parts"], hs
full = [c["hs"] for c in opens if c["hs"]["resumed"] is False]
res = [c["hs"] for c in opens if c["hs"]["resumed"] is True]
assert full, "no full handshake"
for hs in full:
    assert hs["parts"]["sign"]["key"] == "rsa2048", hs["parts"]
    assert "key_exchange" in hs["parts"], hs["parts"]
    assert hs.get("tickets", 0) >= 1, ("tickets issued", hs)
j = json.load(open(summ))["handshake"]
assert j["connections"] == len(opens) and j["servers"] == len(opens), j
assert j["resumed"] == len(res) and j["full"] == len(full), j
if mode == "new":
    assert not res, ("s_time -new resumed", len(res))
    parts = {k: v["ns"] for k, v in j["parts"].items() if k != "other"}
    top = max(parts, key=parts.get)
    assert top == "sign", ("largest server part", top, parts)
    vs = {v["id"] for v in json.load(open(summ))["verdicts"]}
    assert "signature-cost" in vs, vs
else:
    assert len(res) >= 2 and len(res) >= len(full), ("resumed", len(res), "full", len(full))
    for hs in res:
        assert "sign" not in hs["parts"] and not hs["certs"], hs
    f, r = statistics.median(h["ns"] for h in full), statistics.median(h["ns"] for h in res)
    print("full %.0f ns, resumed %.0f ns (p50)" % (f, r))
    assert r < f, ("resumed not cheaper", r, f)
    assert j["resumed_p50_ns"] < j["full_p50_ns"], j
PY
done
