#!/usr/bin/env python3
"""readme_blocks.py README DIR: the commands of README.md's fenced blocks, for docs-readme.sh.
   readme_blocks.py --drop-in FILE UNIT HELP: check a drop-in block (below).

Every ```sh, ```bash, ```shell or ```console block needs a marker on the line before its
fence, saying how the test handles it:

  <!-- readme-test: run -->                    each command runs (DIR/NNN.sh, one per command)
  <!-- readme-test: syntax-only -->            the block is checked with bash -n (DIR/NNN.sh)
  <!-- readme-test: systemd-drop-in UNIT -->   (an ```ini block) a drop-in for UNIT: parsed,
                                               and checked by systemd-analyze verify

A command is a line, with the lines its trailing backslashes continue; blank lines and
comment lines are not commands. In a ```console block only the lines starting with "$ " are
commands (the prompt is dropped), the rest is output. Other blocks (```text output, ```ini
without a marker) are not commands. Prints one line per item, tab-separated:

  run      LINE  FILE        a command of a run block (LINE: where it starts in README)
  syntax   LINE  FILE        a syntax-only block
  dropin   LINE  FILE  UNIT  a drop-in block
  error    LINE  TEXT        a block without a marker, a marker it does not know, a marker
                             followed by no block
Exit status 1 when there is an error line, else 0.

--drop-in: FILE (a drop-in block) is what systemd reads and what tlsmeter needs: a first
comment naming /etc/systemd/system/UNIT.d/NAME.conf; only [Service] keys; Environment= values
NAME=VALUE, NAME being LD_PRELOAD (an absolute path to libtlsmeter.so) or a setting HELP (the
output of TLSMETER_HELP=1) lists; every % written %% (a lone % is a systemd specifier); with
StateDirectory=D, TLSMETER_OUT under /var/lib/D/. Prints the findings; exit 1 if any.
"""
import os
import re
import sys

SHELL_LANGS = {'sh', 'bash', 'shell', 'console'}
MARK = re.compile(r'^<!-- readme-test: ([a-z-]+)(?: (\S+))? -->\s*$')
ANY_MARK = re.compile(r'^<!-- readme-test:')


def fences(lines):
    """(language, fence line index, end fence index) of every fenced block."""
    i = 0
    while i < len(lines):
        m = re.match(r'^```(\S*)\s*$', lines[i])
        if m:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith('```')),
                       len(lines))
            yield m.group(1), i, end
            i = end + 1
        else:
            i += 1


def commands(body, first, console):
    """(README line number, command text) of each command in a block's lines."""
    out, cur, start = [], [], None
    for k, line in enumerate(body):
        if console and not cur:
            if not line.startswith('$ '):
                continue
            line = line[2:]
        if not cur and (not line.strip() or line.lstrip().startswith('#')):
            continue
        if start is None:
            start = first + k
        cur.append(line)
        if not line.endswith('\\'):
            out.append((start + 1, '\n'.join(cur)))
            cur, start = [], None
    if cur:
        out.append((start + 1, '\n'.join(cur)))
    return out


def main(readme, outdir):
    lines = open(readme, encoding='utf-8').read().split('\n')
    os.makedirs(outdir, exist_ok=True)
    items, errors, seq, used = [], [], 0, set()

    def write(text):
        nonlocal seq
        seq += 1
        path = os.path.join(outdir, '%03d.sh' % seq)
        with open(path, 'w', encoding='utf-8') as f:
            f.write(text + '\n')
        return path

    for lang, start, end in fences(lines):
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        m = MARK.match(lines[j]) if j >= 0 else None
        if m:
            used.add(j)
        kind, arg = (m.group(1), m.group(2)) if m else (None, None)
        body = lines[start + 1:end]
        where = start + 1
        if kind is None:
            if lang in SHELL_LANGS:
                errors.append((where, '```%s block without a readme-test marker (run, '
                               'syntax-only) on the line before it' % lang))
        elif kind == 'run' and lang in SHELL_LANGS:
            cmds = commands(body, start + 1, lang == 'console')
            if not cmds:
                errors.append((where, 'a run block without a command'))
            for line, text in cmds:
                items.append(('run', line, write(text)))
        elif kind == 'syntax-only' and lang in SHELL_LANGS:
            items.append(('syntax', where, write('\n'.join(body))))
        elif kind == 'systemd-drop-in' and lang == 'ini' and arg:
            items.append(('dropin', where, write('\n'.join(body)), arg))
        else:
            errors.append((where, 'marker "%s%s" does not fit a ```%s block (run and '
                           'syntax-only take sh, bash, shell or console; systemd-drop-in UNIT '
                           'takes ini)' % (kind, ' ' + arg if arg else '', lang)))
    for j, line in enumerate(lines):
        if ANY_MARK.match(line) and j not in used:
            errors.append((j + 1, 'a readme-test marker that is malformed or not right before '
                           'a fenced block: %s' % line.strip()))
    for item in items:
        print('\t'.join(str(x) for x in item))
    for line, text in sorted(errors):
        print('error\t%d\t%s' % (line, text))
    return 1 if errors else 0


def check_dropin(path, unit, help_path):
    settings = set(re.findall(r'^  (TLSMETER_\w+) ', open(help_path).read(), re.M))
    lines = open(path, encoding='utf-8').read().rstrip('\n').split('\n')
    bad, env, keys, section = [], {}, {}, None
    want = re.compile(r'^# /etc/systemd/system/%s\.d/[\w.-]+\.conf$' % re.escape(unit))
    if not lines or not want.match(lines[0]):
        bad.append('first line should name /etc/systemd/system/%s.d/NAME.conf' % unit)
    for n, line in enumerate(lines, 1):
        if not line.strip() or line.startswith('#'):
            continue
        if line.startswith('['):
            section = line.strip()
            if section != '[Service]':
                bad.append('line %d: section %s (a tracing drop-in needs [Service] only)'
                           % (n, section))
            continue
        key, eq, value = line.partition('=')
        if not eq or section is None:
            bad.append('line %d: not KEY=VALUE inside a section: %s' % (n, line))
            continue
        if re.search(r'%(?!%)', value.replace('%%', '')):
            bad.append('line %d: a lone %% is a systemd specifier; write %%%%' % n)
        keys[key] = value
        if key == 'Environment':
            name, eq, v = value.partition('=')
            if not eq:
                bad.append('line %d: Environment= wants NAME=VALUE' % n)
            elif name != 'LD_PRELOAD' and name not in settings:
                bad.append('line %d: %s is no tlsmeter setting (TLSMETER_HELP=1 lists them)'
                           % (n, name))
            env[name] = v.replace('%%', '%')
    pre = env.get('LD_PRELOAD', '')
    if not (pre.startswith('/') and pre.endswith('/libtlsmeter.so')):
        bad.append('LD_PRELOAD should be the absolute path of libtlsmeter.so, not %r' % pre)
    state = keys.get('StateDirectory')
    if state and not env.get('TLSMETER_OUT', '').startswith('/var/lib/%s/' % state):
        bad.append('TLSMETER_OUT %r is not under StateDirectory=%s (/var/lib/%s/)'
                   % (env.get('TLSMETER_OUT'), state, state))
    for b in bad:
        print(b)
    if not bad:
        print('drop-in for %s: %s' % (unit, ', '.join('%s=%s' % kv for kv in env.items())))
    return 1 if bad else 0


if __name__ == '__main__':
    if len(sys.argv) == 5 and sys.argv[1] == '--drop-in':
        sys.exit(check_dropin(*sys.argv[2:]))
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().split('\n\n')[0])
    sys.exit(main(sys.argv[1], sys.argv[2]))
