#!/usr/bin/env python3
"""doccheck.py: the docs say what the code does (tests/cases/docs-settings.sh).

  doccheck.py settings HELP_OUTPUT README.md   TLSMETER_HELP=1's table and the README's
                                               settings table: same names, order, defaults
  doccheck.py keys docs/trace-format.md TRACE...   every ev kind and key in the traces is
                                               documented in that kind's section
Prints one line per finding; exit 1 if any, else a one-line summary.
"""
import json
import re
import sys

HELP_LINE = re.compile(r'^  (TLSMETER_[A-Z0-9_]+)\s+default (\S+)\s')
README_ROW = re.compile(r'^\| `(TLSMETER_[A-Z0-9_]+)` \| ([^|]*) \|')
# Nested objects whose own keys are part of the contract (maps keyed by data, such as
# end.hooks by function name or header.config by setting name, are checked elsewhere).
NESTED = {('lib', 'caps'), ('end', 'overhead_ns'), ('end', 'reroute'), ('end', 'libs'),
          ('end', 'blind'), ('blind', 'calls')}


def settings(help_path, readme_path):
    helped = [m.groups() for m in map(HELP_LINE.match, open(help_path)) if m]
    table = [(n, d.strip()) for n, d in
             (m.groups() for m in map(README_ROW.match, open(readme_path)) if m)]
    bad = []
    if not helped:
        bad.append('no settings in the TLSMETER_HELP=1 output')
    if [n for n, _ in helped] != [n for n, _ in table]:
        bad.append('names differ: help %s, README %s' % ([n for n, _ in helped],
                                                         [n for n, _ in table]))
    for (n, hd), (_, rd) in zip(helped, table):
        # README writes a literal default in backticks, or words ("none", "system libcrypto")
        # where config.c has an empty default, printed "(none)".
        want = rd[1:-1] if rd.startswith('`') and rd.endswith('`') else '(none)'
        if hd != want:
            bad.append('%s: default %s in config.c, README says %s' % (n, hd, rd))
    return bad, '%d settings agree' % len(helped)


def sections(doc_path):
    """Map each ev kind to the text of the doc's sections whose heading names it."""
    text = open(doc_path).read()
    parts = re.split(r'^## ', text, flags=re.M)
    common, by_kind = '', {}
    for p in parts[1:]:
        head = p.split('\n', 1)[0]
        if head.startswith('Common keys'):
            common = p
        for kind in re.findall(r'`([a-z_]+)`', head.split('(')[0]):
            by_kind[kind] = by_kind.get(kind, '') + p
    return common, by_kind


def documented(key, kind, sec, common):
    # A family of keys written as a pattern: `fn_F_off` with "F = `block`, `ghash`, ...".
    m = re.match(r'^([a-z]+)_([a-z0-9]+)_([a-z]+)$', key)
    if m and '`%s_F_%s`' % (m.group(1), m.group(3)) in sec and '`%s`' % m.group(2) in sec:
        return True
    return any(s in sec for s in ('`%s`' % key, '`%s.%s`' % (kind, key), '"%s"' % key,
                                  '`%s`,' % key)) or '`%s`' % key in common


def keys(doc_path, traces):
    common, by_kind = sections(doc_path)
    m = re.search(r'^\| `ev` \|[^\n]*', common, re.M)
    kinds_row = m.group(0) if m else ''
    seen, bad, lines = {}, [], 0
    for path in traces:
        for line in open(path):
            lines += 1
            e = json.loads(line)
            kind = e.get('ev', '?')
            seen.setdefault(kind, set()).update(e)
            for k, v in e.items():
                if (kind, k) not in NESTED:
                    continue
                for obj in (v if isinstance(v, list) else [v]):
                    if isinstance(obj, dict):
                        seen[kind].update('%s.%s' % (k, sub) for sub in obj)
    for kind in sorted(seen):
        if '`%s`' % kind not in kinds_row:
            bad.append('ev %s: not in the Common keys ev row' % kind)
        sec = by_kind.get(kind)
        if sec is None:
            bad.append('ev %s: no section in %s' % (kind, doc_path))
            continue
        for k in sorted(seen[kind]):
            leaf = k.split('.')[-1]
            if not documented(leaf, kind, sec, common) and not documented(k, kind, sec, common):
                bad.append('%s.%s: written, not documented in its section' % (kind, k))
    n = sum(len(v) for v in seen.values())
    return bad, '%d kinds, %d keys from %d lines documented' % (len(seen), n, lines)


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == 'settings':
        bad, ok = settings(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 4 and sys.argv[1] == 'keys':
        bad, ok = keys(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(__doc__)
    for b in bad:
        print(b)
    if not bad:
        print(ok)
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
