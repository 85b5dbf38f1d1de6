#!/usr/bin/env python3
"""layers.py: the preload's and the analyzer's folders are layers, and includes point down.

Each tree has an order of folders, lowest first (docs/design.md, "Layers"); a file may include
headers of its own folder and of folders below it, never above. Files at the tree's top
(preload/main.c, analyzer/main.c) sit above every folder. Includes of the project's own
headers name their folder ("core/record.h"); a bare name would hide which layer it is from.
The repository's common/ (the trace vocabulary both programs share, common/schema.def) is
below every layer of both trees: "common/schema.h" may be included anywhere, and common/
itself includes nothing of either tree. Also checked: no C file of either tree over 600 lines.

Prints one line per violation and exits 1 if any; prints a summary line otherwise.
"""
import os
import re
import sys

TREES = {
    "preload": ["arch", "base", "trace", "forward", "core", "reroute", "hooks"],
    "analyzer": ["base", "model", "input", "verdicts", "output"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
MAX_LINES = 600
SHARED = "common"


def check_shared(top):
    """common/ includes only its own files."""
    problems, root = [], os.path.join(top, SHARED)
    for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        text = open(os.path.join(root, name), encoding="utf-8", errors="replace").read()
        for m in INCLUDE.finditer(text):
            if not os.path.exists(os.path.join(root, m.group(1))):
                problems.append(f'{SHARED}/{name}: #include "{m.group(1)}" is not a file of '
                                f"{SHARED}/ (it is below both trees)")
    return problems


def check_tree(top, tree, order):
    rank = {name: i for i, name in enumerate(order)}
    problems, files, edges = [], 0, set()
    root = os.path.join(top, tree)
    for dirpath, _, names in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        layer = "" if rel == "." else rel.split(os.sep)[0]
        if layer and layer not in rank:
            problems.append(f"{tree}/{rel}: a folder that is not a layer of {tree}/ "
                            f"(known: {', '.join(order)})")
            continue
        here = rank.get(layer, len(order))
        for name in sorted(names):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, name)
            shown = os.path.relpath(path, top)
            files += 1
            text = open(path, encoding="utf-8", errors="replace").read()
            if name.endswith(".c") and text.count("\n") > MAX_LINES:
                problems.append(f"{shown}: {text.count(chr(10))} lines (at most {MAX_LINES})")
            for m in INCLUDE.finditer(text):
                inc = m.group(1)
                line = text.count("\n", 0, m.start()) + 1
                first = inc.split("/")[0]
                if first == SHARED and os.path.exists(os.path.join(top, inc)):
                    edges.add((layer or "top", SHARED))
                    continue
                if "/" not in inc or first not in rank:
                    problems.append(f'{shown}:{line}: #include "{inc}" does not name a layer '
                                    f"folder of {tree}/")
                    continue
                if not os.path.exists(os.path.join(root, inc)):
                    problems.append(f'{shown}:{line}: #include "{inc}": no such file')
                    continue
                if rank[first] > here:
                    problems.append(f'{shown}:{line}: #include "{inc}" points up: '
                                    f"{layer or 'top'} is below {first} "
                                    f"({' < '.join(order)})")
                if first != layer:
                    edges.add((layer or "top", first))
    return problems, files, edges


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else "."
    bad = 0
    for tree, order in TREES.items():
        problems, files, edges = check_tree(top, tree, order)
        for p in problems:
            print(p)
        bad += len(problems)
        print(f"{tree}: {files} files, {len(edges)} folder edges, all downward"
              if not problems else f"{tree}: {len(problems)} problems")
    problems = check_shared(top)
    for p in problems:
        print(p)
    bad += len(problems)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
