#!/usr/bin/env bash
# core-python: Python's ssl module dlopens libssl RTLD_LOCAL long after start-up, where
# dlsym(RTLD_NEXT) finds nothing. The preload must still forward and record every record.
# tlsm-userland: trixie
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload core-python

BODY=$((512 * 1024 + 11))
tls_make_file p.bin "$BODY"
if ! tls_server_start 1.3 TLS_AES_256_GCM_SHA384; then
    fail "core-python: openssl s_server did not start"
    exit 0
fi
p=$d/py
tls_client py "$TLS_PORT" p.bin "$p.plain"
tls_client py "$TLS_PORT" p.bin "$p.traced" "$p.trace.%p.jsonl"
tls_traces "$p.trace.*"
if [ "$(cat "$p.plain.rc")" != 0 ]; then
    fail "core-python: $TLSM_PY client failed without the preload: $(head -c 200 "$p.plain.err")"
elif ! why=$(tls_same_run core-python "$p.plain" "$p.traced"); then
    fail "core-python ($TLSM_PY): $why"
elif [ "${#TRACES[@]}" -ne 1 ]; then
    fail "core-python: ${#TRACES[@]} trace files, want 1"
else
    TLS_PASS_NOTE=$TLSM_PY tls_trace_check "core-python records" "${TRACES[0]}" \
        --got "$(cat "$p.traced.got")" --body "$BODY" --full-read --cipher AES-256-GCM \
        --proto TLSv1.3 --suite TLS_AES_256_GCM_SHA384 --conns 1
    # The lib line of the dlopened libssl must be there, marked as holding SSL_read.
    check "core-python lib" "$TLSM_PY" -c 'import json, sys
libs = [e for e in map(json.loads, open(sys.argv[1])) if e["ev"] == "lib"]
ok = any(l.get("has_ssl") and "libssl" in l.get("path", "") for l in libs)
sys.exit(0 if ok else "no lib line for libssl with has_ssl:true among %d lib lines" % len(libs))' \
        "${TRACES[0]}"
fi
