#!/usr/bin/env bash
# core-config: TLSMETER_* settings. A malformed value gets exactly one warning naming the
# variable and the accepted values, the default is used, and the program runs unchanged.
# TLSMETER_DISABLE=1 writes no trace; READS=0 / RECORDS=0 drop those events.
# tlsm-arch: x86_64 aarch64
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload core-config

BODY=$((256 * 1024 + 1))
tls_make_file c.bin "$BODY"
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "core-config: openssl s_server did not start"
    exit 0
fi
tls_client "$TLS_DL" "$TLS_PORT" c.bin "$d/plain"
if [ "$(cat "$d/plain.rc")" != 0 ]; then
    fail "core-config: $TLS_DL failed without the preload"
    exit 0
fi

# run_cfg TAG VAR=VALUE...: a traced download ($TLS_DL) with those settings, compared with the
# plain run; sets P (output prefix) and TRACES. Returns 1 (after failing NAME) on a difference.
run_cfg() {
    local tag=$1 why
    shift
    P=$d/$tag
    TLS_ENV=("$@")
    tls_client "$TLS_DL" "$TLS_PORT" c.bin "$P" "$P.trace.%p.jsonl"
    TLS_ENV=()
    tls_traces "$P.trace.*"
    if ! why=$(tls_same_run "$tag" "$d/plain" "$P"); then
        fail "core-config $tag: $why"
        return 1
    fi
}

# malformed TAG VAR VALUE ACCEPTED-REGEX CHECK-ARGS...: one warning line naming VAR and matching
# ACCEPTED-REGEX; the trace (defaults in force) passes tracecheck with CHECK-ARGS.
malformed() {
    local tag=$1 var=$2 value=$3 re=$4 name="core-config $1" warn
    shift 4
    run_cfg "$tag" "$var=$value" || return
    warn=$(grep '^tlsmeter:' "$P.err")
    if [ "$(tls_notes "$P.err")" -ne 1 ]; then
        fail "$name: $(tls_notes "$P.err") tlsmeter lines for $var=$value, want 1: $warn"
    elif [[ $warn != *"$var"* ]] || ! grep -Eq "$re" <<<"$warn"; then
        fail "$name: the warning must name $var and the accepted values ($re): $warn"
    elif [ "${#TRACES[@]}" -ne 1 ]; then
        fail "$name: ${#TRACES[@]} traces with $var=$value, want 1 (the default applies)"
    else
        tls_trace_check "$name" "${TRACES[0]}" --got "$(cat "$P.got")" --conns 1 "$@"
    fi
}

BOOL='0.*1|1.*0'
malformed reads-maybe TLSMETER_READS maybe "$BOOL" --full-read --min-recs 2
malformed disable-2 TLSMETER_DISABLE 2 "$BOOL" --full-read --min-recs 2
malformed records-2 TLSMETER_RECORDS 2 "$BOOL" --full-read --min-recs 2
malformed quiet-x TLSMETER_QUIET x "$BOOL" --full-read --min-recs 2
malformed crypto-bogus TLSMETER_CRYPTO bogus 'native.*hw.*soft|soft.*hw.*native' --full-read \
    --min-recs 2
malformed unknown-var TLSMETER_BOGUS 1 'TLSMETER_' --full-read --min-recs 2

# TLSMETER_DISABLE=1: no trace at all and nothing on stderr.
if run_cfg disable-1 TLSMETER_DISABLE=1; then
    if [ "${#TRACES[@]}" -ne 0 ]; then
        fail "core-config disable-1: TLSMETER_DISABLE=1 wrote ${TRACES[*]}"
    elif [ "$(tls_notes "$P.err")" -ne 0 ]; then
        fail "core-config disable-1: stderr has $(grep '^tlsmeter:' "$P.err" | head -n 2)"
    else
        pass "core-config disable-1"
    fi
fi

# READS=0, RECORDS=0: the other kind of event stays.
if run_cfg reads-0 TLSMETER_READS=0; then
    if [ "${#TRACES[@]}" -eq 1 ]; then
        tls_trace_check "core-config reads-0" "${TRACES[0]}" --no-reads --min-recs 2 --conns 1
    else
        fail "core-config reads-0: ${#TRACES[@]} traces, want 1"
    fi
fi
if run_cfg records-0 TLSMETER_RECORDS=0; then
    if [ "${#TRACES[@]}" -eq 1 ]; then
        tls_trace_check "core-config records-0" "${TRACES[0]}" --no-recs --got "$(cat "$P.got")" \
            --conns 1
    else
        fail "core-config records-0: ${#TRACES[@]} traces, want 1"
    fi
fi

# The header's crypto_mode after TLSMETER_CRYPTO=bogus is the default, native.
tls_traces "$d/crypto-bogus.trace.*"
if [ "${#TRACES[@]}" -eq 1 ]; then
    check "core-config crypto-bogus default" "$TLSM_PY" -c 'import json, sys
h = json.loads(open(sys.argv[1]).readline())
sys.exit(0 if h.get("crypto_mode") == "native" else "header crypto_mode %r" % h.get("crypto_mode"))' \
        "${TRACES[0]}"
fi

# The path template: %t is the start time in seconds, %% a percent sign, %p the pid.
t0=$(date +%s)
TLS_ENV=()
tls_client "$TLS_DL" "$TLS_PORT" c.bin "$d/tmpl" "$d/tmpl.%t.%%.%p.jsonl"
t1=$(date +%s)
tls_traces "$d/tmpl.*.jsonl"
if [ "${#TRACES[@]}" -ne 1 ]; then
    fail "core-config template: ${#TRACES[@]} traces for TLSMETER_OUT=tmpl.%t.%%.%p.jsonl"
else
    f=$(basename "${TRACES[0]}")
    ts=$(sed -n 's/^tmpl\.\([0-9]*\)\.%\.[0-9]*\.jsonl$/\1/p' <<<"$f")
    if [ -n "$ts" ] && [ "$ts" -ge "$t0" ] && [ "$ts" -le "$t1" ]; then
        pass "core-config template ($f)"
    else
        fail "core-config template: file $f, want tmpl.<time in $t0..$t1>.%.<pid>.jsonl"
    fi
fi

# An escape the template does not know (%q) is a typo, not a name: one warning naming
# TLSMETER_OUT and the escape, and the trace goes to the default name (in the program's
# working directory: a fresh one here), the program unchanged.
mkdir -p "$d/badout"
(cd "$d/badout" && tls_client "$TLS_DL" "$TLS_PORT" c.bin "$d/badtmpl" "$d/badout/x.%q.jsonl")
warn=$(grep '^tlsmeter:' "$d/badtmpl.err")
made=$(cd "$d/badout" && ls)
if ! why=$(tls_same_run badtmpl "$d/plain" "$d/badtmpl"); then
    fail "core-config template %q: $why"
elif [ "$(tls_notes "$d/badtmpl.err")" -ne 1 ] || [[ $warn != *TLSMETER_OUT*%q* ]]; then
    fail "core-config template %q: want one warning naming TLSMETER_OUT and %q: $warn"
elif [[ $made != tlsmeter.[0-9]*.* ]] || [ "$(echo "$made" | wc -l)" -ne 1 ]; then
    fail "core-config template %q: files made: $(echo "$made" | tr '\n' ' '), want one tlsmeter.PID trace"
else
    pass "core-config template %q: one warning, the default name ($made)"
fi
