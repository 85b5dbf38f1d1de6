#!/usr/bin/env python3
"""doccheck.py: the docs say what the code does (tests/cases/docs-settings.sh).

  doccheck.py settings HELP_OUTPUT README.md   TLSMETER_HELP=1's table and the README's
                                               settings table: same names, order, defaults
  doccheck.py keys docs/trace-format.md TRACE...   every ev kind and key in the traces is
                                               documented in that kind's section
  doccheck.py keys --schema common/schema.def docs/trace-format.md TRACE...   the same, and
                                               every kind, key (with its type) and name the
                                               traces hold is in the schema
  doccheck.py schema common/schema.def docs/trace-format.md docs/analyzer.md READER.c EVENT.c
                                               every kind and key of the schema is documented
                                               in its section; every blind reason, capability,
                                               class, AES and GHASH name in trace-format.md, every verdict
                                               id in analyzer.md; the analyzer's reader has a
                                               case for every kind, and each key of its hot-kind
                                               table (EVENT.c) is a rec, read or conn key of the
                                               schema, with the schema's type
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


SCHEMA_LINE = re.compile(r'^SCHEMA_(EV|KEY|BLIND|CAP|CLASS|AES|GHASH|VERDICT)\((\w+), "([^"]+)"'
                         r'(?:, (\w+))?\)', re.M)
JSON_TYPES = {'INT': (int,), 'STR': (str,), 'BOOL': (bool,), 'NUM': (int, float), 'OBJ': (dict,),
              'ARR': (list,)}


def load_schema(path):
    """The lists of common/schema.def: kinds {ID: name}, keys {kind name: {key: TYPE}}, and
    the name lists blind, cap, class, verdict."""
    sc = {'EV': {}, 'KEY': {}, 'BLIND': [], 'CAP': [], 'CLASS': [], 'AES': [], 'GHASH': [],
          'VERDICT': []}
    for what, ident, name, typ in SCHEMA_LINE.findall(open(path).read()):
        if what == 'EV':
            sc['EV'][ident] = name
        elif what == 'KEY':
            sc['KEY'].setdefault(ident, {})[name] = typ
        else:
            sc[what].append(name)
    sc['keys'] = {sc['EV'].get(ident, ident): keys for ident, keys in sc['KEY'].items()}
    return sc


def schema_type(sc, kind, key):
    """The schema's TYPE of key ("a" or "a.b") in kind, or None; fn_F_* families by pattern."""
    keys = sc['keys'].get(kind, {})
    if key in keys:
        return keys[key]
    m = re.match(r'^fn_([a-z0-9]+)_([a-z]+)$', key)
    return keys.get('fn_F_%s' % m.group(2)) if m else None


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


def against_schema(sc, kind, e, bad):
    """The line's keys, their JSON types and the names in it are the schema's."""
    if kind not in sc['keys']:
        bad.append('ev %s: not in the schema' % kind)
        return
    def check(key, v):
        t = schema_type(sc, kind, key)
        if t is None:
            bad.append('%s.%s: written, not in the schema' % (kind, key))
        elif not isinstance(v, JSON_TYPES[t]) or (t in ('INT', 'NUM') and isinstance(v, bool)):
            bad.append('%s.%s: written as %s, the schema says %s' % (kind, key,
                                                                    type(v).__name__, t))
    for k, v in e.items():
        if k != 'ev':
            check(k, v)
        if (kind, k) in NESTED and k != 'caps':
            for obj in (v if isinstance(v, list) else [v]):
                for sub, sv in (obj.items() if isinstance(obj, dict) else ()):
                    check('%s.%s' % (k, sub), sv)
    for cap in e.get('caps', {}) if kind == 'lib' else ():
        if cap not in sc['CAP']:
            bad.append('lib.caps.%s: not a capability of the schema' % cap)
    entries = [e] + (e.get('blind', []) if kind == 'end' else [])
    for r in (r for x in entries if isinstance(x, dict) for r in x.get('reasons', [])):
        if r not in sc['BLIND']:
            bad.append('%s: blind reason %r not in the schema' % (kind, r))
    if kind == 'calib' and e.get('impl') not in sc['CLASS']:
        bad.append('calib.impl %r: not a class of the schema' % e.get('impl'))
    for key in ('aes', 'ghash') if kind == 'impl' else ():
        if e.get(key) not in sc[key.upper()]:
            bad.append('impl.%s %r: not %s code of the schema' % (key, e.get(key), key))


def keys(doc_path, traces, schema_path=None):
    sc = load_schema(schema_path) if schema_path else None
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
            if sc:
                against_schema(sc, kind, e, bad)
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
    bad = sorted(set(bad), key=bad.index)
    return bad, '%d kinds, %d keys from %d lines documented%s' % (
        len(seen), n, lines, ' and in the schema' if sc else '')


FIELD_ROW = re.compile(r'^\s*\{"([a-z_]+)", FT_(INT|STR|BOOL), ', re.M)


def hot_fields(sc, event_path, bad):
    """The analyzer's table of the keys it reads from rec, read and conn lines."""
    rows = FIELD_ROW.findall(open(event_path).read())
    if not rows:
        bad.append('%s: no {"key", FT_...} rows read' % event_path)
    for key, typ in rows:
        if key == 'ev':
            continue
        types = {sc['keys'].get(k, {}).get(key) for k in ('rec', 'read', 'conn')} - {None}
        if not types:
            bad.append('%s: the reader reads key %s, no rec/read/conn key of the schema' %
                       (event_path, key))
        elif typ not in types:
            bad.append('%s: the reader reads %s as %s, the schema says %s' %
                       (event_path, key, typ, '/'.join(sorted(types))))
    return len(rows)


def schema(schema_path, doc_path, analyzer_doc, reader_path, event_path):
    sc = load_schema(schema_path)
    common, by_kind = sections(doc_path)
    m = re.search(r'^\| `ev` \|[^\n]*', common, re.M)
    kinds_row = m.group(0) if m else ''
    doc, adoc, reader = open(doc_path).read(), open(analyzer_doc).read(), open(reader_path).read()
    bad, nkeys = [], 0
    if not sc['EV'] or not sc['KEY']:
        bad.append('%s: no SCHEMA_EV or SCHEMA_KEY lines read' % schema_path)
    for ident, kind in sc['EV'].items():
        if '`%s`' % kind not in kinds_row:
            bad.append('ev %s: in the schema, not in the Common keys ev row' % kind)
        if not re.search(r'^\s*case EV_%s:' % ident, reader, re.M):
            bad.append('ev %s: %s has no case EV_%s' % (kind, reader_path, ident))
        sec = by_kind.get(kind)
        if sec is None:
            bad.append('ev %s: in the schema, no section in %s' % (kind, doc_path))
            continue
        for key in sc['keys'].get(kind, {}):
            nkeys += 1
            leaf = key.split('.')[-1]
            if not documented(leaf, kind, sec, common) and not documented(key, kind, sec, common):
                bad.append('%s.%s: in the schema, not documented in its section' % (kind, key))
    for ident in sc['KEY']:
        if ident not in sc['EV']:
            bad.append('SCHEMA_KEY(%s, ...): no SCHEMA_EV %s' % (ident, ident))
    for what, text, where in (('BLIND', doc, doc_path), ('CAP', doc, doc_path),
                              ('AES', doc, doc_path), ('GHASH', doc, doc_path),
                              ('CLASS', doc + adoc, 'the docs'), ('VERDICT', adoc, analyzer_doc)):
        for name in sc[what]:
            # `name`, or "name" inside a quoted JSON example (`["ktls"]`, `{"aesni":bool}`)
            if not re.search(r'[`"]%s[`"]' % re.escape(name), text):
                bad.append('%s %s: in the schema, not in %s' % (what.lower(), name, where))
    nfields = hot_fields(sc, event_path, bad)
    return bad, ('%d kinds, %d keys, %d blind reasons, %d capabilities, %d classes, %d AES and '
                 '%d GHASH codes, %d verdicts of the schema documented; the reader handles every '
                 'kind and its %d hot keys are the schema\'s' %
                 (len(sc['EV']), nkeys, len(sc['BLIND']), len(sc['CAP']), len(sc['CLASS']),
                  len(sc['AES']), len(sc['GHASH']), len(sc['VERDICT']), nfields))


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == 'settings':
        bad, ok = settings(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 6 and sys.argv[1:3] == ['keys', '--schema']:
        bad, ok = keys(sys.argv[4], sys.argv[5:], sys.argv[3])
    elif len(sys.argv) >= 4 and sys.argv[1] == 'keys':
        bad, ok = keys(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 7 and sys.argv[1] == 'schema':
        bad, ok = schema(*sys.argv[2:])
    else:
        sys.exit(__doc__)
    for b in bad:
        print(b)
    if not bad:
        print(ok)
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
