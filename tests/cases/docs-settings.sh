#!/usr/bin/env bash
# docs-settings: the docs cannot drift from the code. (1) The settings TLSMETER_HELP=1 prints
# (preload/trace/config.c's table) and the README's settings table agree name by name, in order,
# with the same defaults; the header's `config` names the same settings. (2) Every `ev` kind
# and every key the preload writes into real traces is documented in docs/trace-format.md, in
# that kind's section: a download with stacks, calibration and an unknown setting (a warn
# event) on, a forked child, a download rerouted to the hardware backend with verification,
# and a GnuTLS program (wget: a blind event); and every key written, with its JSON type, and
# every blind reason, capability, class, AES and GHASH name written is in common/schema.def.
# (3) The schema against the docs: every kind and key of it documented in its section, every
# blind reason, capability, class, AES and GHASH name in the docs, every verdict id in
# docs/analyzer.md, a case for every kind in the analyzer's reader, and its table of hot keys
# the schema's. tests/tools/doccheck.py does the comparing.
# shellcheck source=tests/lib.sh
. "$TLSM_TOP/tests/lib.sh"
# shellcheck source=tests/lib-tls.sh
. "$TLSM_TOP/tests/lib-tls.sh"
d=$(case_dir)
tls_init "$d"
tls_need_preload docs-settings
DOC=$TLSM_TOP/docs/trace-format.md
TOOL=$TLSM_TOOLS/doccheck.py
SCHEMA=$TLSM_TOP/common/schema.def

# (3) The schema and the docs (no trace needed).
reader=$(find "$TLSM_TOP/analyzer" -name reader.c | head -n 1)
fields=$(find "$TLSM_TOP/analyzer" -name event.c | head -n 1)
check "docs-settings: common/schema.def is documented and the reader handles its kinds and keys" \
    "$TLSM_PY" "$TOOL" schema "$SCHEMA" "$DOC" "$TLSM_TOP/docs/analyzer.md" "$reader" "$fields"

# (1) Settings. /bin/true, not the shell's builtin: the preload must be loaded.
TLSMETER_HELP=1 TLSMETER_DISABLE=1 run_traced /bin/true 2>"$d/help.txt"
check "docs-settings: TLSMETER_HELP=1 and the README's settings table agree" \
    "$TLSM_PY" "$TOOL" settings "$d/help.txt" "$TLSM_TOP/README.md"

tls_make_file f.bin $((700 * 1024 + 3))
if ! tls_server_start 1.3 TLS_AES_128_GCM_SHA256; then
    fail "docs-settings: openssl s_server did not start"
    exit 0
fi

# (2) Traces that together write every kind of event cheaply made on loopback.
TLS_ENV=(TLSMETER_STACKS=1 TLSMETER_CALIBRATE=1 TLSMETER_DOCS_PROBE=1)
tls_client "$TLS_DL" "$TLS_PORT" f.bin "$d/dl" "$d/dl.%p.jsonl"
TLS_ENV=()
TLS_ENV=(TLSMETER_EVENTS=both) # summary events too (and their fork handling)
tls_run "$d/fork" "$d/fork.%p.jsonl" "$TLSM_PROGS/forkclient" "$TLS_PORT" "$TLS_CERT" /f.bin
TLS_ENV=()
if tls_mode_ok hw; then
    TLS_ENV=(TLSMETER_CRYPTO=hw TLSMETER_VERIFY=3)
    tls_client tlsget "$TLS_PORT" f.bin "$d/hw" "$d/hw.%p.jsonl"
    TLS_ENV=()
else
    skip "docs-settings reroute trace: $TLS_MODE_SKIP"
fi
"$TLSM_TOP/scripts/install-deps" --extra wget >/dev/null 2>&1
if under_qemu || ! command -v wget >/dev/null; then
    skip "docs-settings blind trace: no wget (GnuTLS) here, and install-deps could not install it"
elif [ -n "${TLSM_SAN:-}" ]; then
    # blind-otherlib probes this; here the blind keys are covered by the plain build's run.
    skip "docs-settings blind trace: wget can hang with the sanitizer runtime preloaded (not tlsmeter's doing)"
else
    tls_run "$d/wget" "$d/wget.%p.jsonl" wget -q --no-check-certificate -O /dev/null \
        "https://127.0.0.1:$TLS_PORT/f.bin"
fi
for r in dl fork hw wget; do
    [ -f "$d/$r.rc" ] && [ "$(cat "$d/$r.rc")" != 0 ] &&
        fail "docs-settings: the $r run failed (exit $(cat "$d/$r.rc")): $(head -c 200 "$d/$r.err")"
done
tls_traces "$d/*.jsonl*"
kinds=$(cat "${TRACES[@]}" 2>/dev/null | sed -n 's/^{"ev":"\([a-z_]*\)".*/\1/p' | sort -u | tr '\n' ' ')
# The probes above must have made what they are for, or the key check proves little.
want="header lib conn rec read impl calib stack module warn fwd end summary"
[ -f "$d/wget.rc" ] && want+=" blind" # wget ran: its GnuTLS must be named
for k in $want; do
    [[ " $kinds" == *" $k "* ]] || fail "docs-settings: no $k event in the probe traces (kinds: $kinds)"
done
if ! grep -q '"fork_of"' "${TRACES[@]}"; then
    fail "docs-settings: no forked child's trace among ${#TRACES[@]} traces"
fi
check "docs-settings: every ev kind and key written (${#TRACES[@]} traces: $kinds) is in docs/trace-format.md and common/schema.def" \
    "$TLSM_PY" "$TOOL" keys --schema "$SCHEMA" "$DOC" "${TRACES[@]}"
# The header's config object names exactly the settings the help lists (less TLSMETER_HELP).
check "docs-settings: header.config names the same settings as TLSMETER_HELP=1" "$TLSM_PY" -c '
import json, re, sys
helped = {m.group(1) for m in map(re.compile(r"^  (TLSMETER_\w+) ").match, open(sys.argv[1])) if m}
cfg = set(json.loads(open(sys.argv[2]).readline())["config"])
sys.exit(0 if cfg and cfg <= helped and helped - cfg <= {"TLSMETER_HELP"} else
         "config %s vs help %s" % (sorted(cfg), sorted(helped)))' "$d/help.txt" "${TRACES[0]}"
