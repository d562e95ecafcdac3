#!/usr/bin/env python3
"""Census of repeated code: every pair `duplicates` finds, with a class each.

    scripts/dupcensus.py            # counts per class and per directory
    scripts/dupcensus.py -v         # and every pair with its class

`duplicates` (a developer command, not part of this repository) lists at most
200 rows a run. This script lists every pair by running it over copies of
parts of the tree: a part whose run is cut is split in halves, and the pairs
across two halves come from a run over both. A row counts once.

Classes (from the first range of the row, the longest run of the pair):
  import     every line of one side is inside a Go `import ( ... )` block
             (its own first and last line included)
  import-edge  more than half of one side's counted lines (not blank, a
             comment or lone punctuation) are import paths: an import
             block's tail with the head of the declaration after it
  config     one side is a config key table: in broker/config or
             namesrv/config, at least half of its lines carry a `key:"` tag
  generated  one side is generated code (pkg/grpcapi/v2pb/*.pb.go)
  proto      both sides are .proto files (the generated code's sources)
  code       everything else; counted also by what duplicates says of the
             row: the same to the letter, alike in shape only, or shape
             marked boilerplate (mostly keywords and punctuation)

It only counts: the runs over parts of the tree can show a few pairs that the
run over the whole tree leaves out (a run in more than eight places is too
common to list there, not in a part), so the total is printed next to the
whole tree's own count. The ranges of a row, and with them the class of a
borderline row (import tail or code), can differ with the part a run read:
to compare two trees, compare their -v listings by file pair.
"""
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROW = re.compile(r"^D\d+ (\S+):(\d+)-(\d+) ~ (\S+):(\d+)-(\d+)( shape)?( boilerplate)?")
MORE = re.compile(r"^\(\+(\d+) more pairs\)")
HEAD = re.compile(r"^(\d+) pairs of places|^no duplicates")


def run(root, files):
    """Runs duplicates over a copy of files; returns (rows, cut)."""
    tmp = tempfile.mkdtemp(prefix="dupcensus-")
    try:
        for f in files:
            dst = os.path.join(tmp, f)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            src = os.path.join(root, f)
            try:
                os.link(src, dst)
            except OSError:
                shutil.copyfile(src, dst)
        out = subprocess.run(
            ["duplicates", "--repo", tmp, "--most", "200", "--seconds", "300"],
            capture_output=True, text=True, check=False).stdout
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows, cut = [], False
    for line in out.splitlines():
        m = ROW.match(line)
        if m:
            kind = "boilerplate" if m.group(8) else "shape" if m.group(7) else "same"
            rows.append((m.group(1), int(m.group(2)), int(m.group(3)),
                         m.group(4), int(m.group(5)), int(m.group(6)), kind))
        elif MORE.match(line):
            cut = True
        elif line.startswith("incomplete:"):
            sys.exit("dupcensus: " + line)
    return rows, cut


def cover(root, a, b, found):
    """Adds to found every row with one side in a and the other in b
    (a is b: both sides in a)."""
    files = a if a is b else a + b
    rows, cut = run(root, files)
    if not cut:
        sa, sb = set(a), set(b)
        for r in rows:
            if (r[0] in sa and r[3] in sb) or (r[0] in sb and r[3] in sa):
                key = tuple(sorted([r[:3], r[3:6]]))
                found.setdefault(key, r)
        return
    if a is b:
        if len(a) < 2:
            sys.exit("dupcensus: one file has more than 200 pairs: %s" % a)
        a1, a2 = a[: len(a) // 2], a[len(a) // 2:]
        cover(root, a1, a1, found)
        cover(root, a2, a2, found)
        cover(root, a1, a2, found)
        return
    if len(a) < len(b):
        a, b = b, a
    if len(a) < 2:
        sys.exit("dupcensus: a pair of files has more than 200 rows: %s %s" % (a, b))
    cover(root, a[: len(a) // 2], b, found)
    cover(root, a[len(a) // 2:], b, found)


_lines = {}


def lines(root, f):
    if f not in _lines:
        try:
            with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                _lines[f] = fh.read().split("\n")
        except OSError:
            _lines[f] = []
    return _lines[f]


def in_import(root, f, lo, hi):
    if not f.endswith(".go"):
        return False
    ls = lines(root, f)
    inside = set()
    block = False
    for i, l in enumerate(ls, 1):
        s = l.strip()
        if s.startswith("import ("):
            block = True
            inside.add(i)
        elif block and s == ")":
            block = False
            inside.add(i)
        elif block:
            inside.add(i)
    return all(i in inside or not ls[i - 1].strip() for i in range(lo, hi + 1) if i <= len(ls))


def import_lines(root, f):
    """The line numbers of f inside Go import blocks, delimiters included."""
    inside = set()
    if not f.endswith(".go"):
        return inside
    block = False
    for i, l in enumerate(lines(root, f), 1):
        s = l.strip()
        if s.startswith("import ("):
            block = True
            inside.add(i)
        elif block:
            inside.add(i)
            if s == ")":
                block = False
    return inside


PUNCT = re.compile(r"^[\s(){}\[\],;]*$")


def counted(l):
    """Whether duplicates counts the line: not blank, a comment or lone
    punctuation."""
    s = l.strip()
    return bool(s) and not s.startswith(("//", "/*", "*", "#")) and not PUNCT.match(s)


def import_edge(root, f, lo, hi):
    """More than half of the side's counted lines are import paths: the
    pair is an import block's tail with a declaration's head."""
    inside = import_lines(root, f)
    ls = lines(root, f)
    c = [i for i in range(lo, min(hi, len(ls)) + 1) if counted(ls[i - 1])]
    return bool(c) and 2 * sum(i in inside for i in c) > len(c)


def key_table(root, f, lo, hi):
    if not (f.startswith("broker/config/") or f.startswith("namesrv/config/")):
        return False
    ls = [l for l in lines(root, f)[lo - 1:hi] if l.strip()]
    return bool(ls) and 2 * sum('key:"' in l for l in ls) >= len(ls)


def classify(root, r):
    fa, la, ha, fb, lb, hb = r[:6]
    if in_import(root, fa, la, ha) or in_import(root, fb, lb, hb):
        return "import"
    if import_edge(root, fa, la, ha) or import_edge(root, fb, lb, hb):
        return "import-edge"
    if key_table(root, fa, la, ha) or key_table(root, fb, lb, hb):
        return "config"
    gen = re.compile(r"^pkg/grpcapi/v2pb/.*\.pb\.go$")
    if gen.match(fa) or gen.match(fb):
        return "generated"
    if fa.endswith(".proto") and fb.endswith(".proto"):
        return "proto"
    return "code"


def main():
    verbose = "-v" in sys.argv[1:]
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"],
                          capture_output=True, text=True, check=True).stdout.strip()
    whole = subprocess.run(["duplicates", "--repo", root, "--most", "1", "--seconds", "300"],
                           capture_output=True, text=True, check=False).stdout.splitlines()
    files = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others",
                            "--exclude-standard"],
                           capture_output=True, text=True, check=True).stdout.split("\n")
    files = sorted(f for f in files if f and os.path.isfile(os.path.join(root, f)))
    found = {}
    cover(root, files, files, found)
    classes = collections.Counter()
    kinds = collections.Counter()
    perdir = collections.defaultdict(collections.Counter)
    out = []
    for key, r in sorted(found.items()):
        c = classify(root, r)
        classes[c] += 1
        if c == "code":
            kinds[r[6]] += 1
        for d in sorted({os.path.dirname(r[0]), os.path.dirname(r[3])}):
            perdir[d][c] += 1
        out.append("%-11s %s:%d-%d ~ %s:%d-%d %s" % ((c,) + r))
    print("whole tree: " + (whole[0] if whole else "?"))
    print("pairs listed: %d" % len(found))
    for c in ("code", "import", "import-edge", "config", "generated", "proto"):
        print("  %-11s %d" % (c, classes[c]))
    print("code pairs by what duplicates says of them: %d the same to the letter, "
          "%d alike in shape, %d shape marked boilerplate"
          % (kinds["same"], kinds["shape"], kinds["boilerplate"]))
    print("code pairs per directory (a pair across two directories counts in both):")
    for d, cnt in sorted(perdir.items(), key=lambda kv: (-kv[1]["code"], kv[0])):
        if cnt["code"]:
            print("  %4d %s" % (cnt["code"], d))
    if verbose:
        print("pairs:")
        print("\n".join(out))


if __name__ == "__main__":
    main()
