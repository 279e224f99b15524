#!/usr/bin/env python3
"""Lists the functions in crates/ longer than a limit (80 lines by default).

A function may stay long when a plain `//` comment just above it (among its
doc comment and attributes) says why, and contains the word "long" (e.g.
`// Long on purpose: one flat table of options.`); those are listed apart.
Lines are counted from the `fn` line to its closing brace. Exit status 1
when a long function carries no such comment, so CI can run it.

Test code is exempt (a test reads best as one story): files under a
crate's tests/, functions marked #[test], and everything after a file's
`#[cfg(test)]` module opens.

Usage: scripts/long-fns.py [--limit N] [--all] [ROOT]
  --all  also list the explained ones
"""
import os
import re
import sys

FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\"C\"\s+)?fn\s+(\w+)")


def body_end(lines, start):
    """Index of the line that closes the function opened at `start` (or
    None for a declaration without a body). Skips strings, chars and
    comments well enough for this tree."""
    depth, opened = 0, False
    in_block = 0
    for i in range(start, len(lines)):
        line = lines[i]
        j = 0
        while j < len(line):
            c = line[j]
            two = line[j : j + 2]
            if in_block:
                if two == "*/":
                    in_block -= 1
                    j += 2
                    continue
                if two == "/*":
                    in_block += 1
                    j += 2
                    continue
                j += 1
                continue
            if two == "//":
                break
            if two == "/*":
                in_block += 1
                j += 2
                continue
            if c == '"':
                # Raw strings r#"..."# are rare here; treat them as plain.
                j += 1
                while j < len(line) and line[j] != '"':
                    j += 2 if line[j] == "\\" else 1
                j += 1
                continue
            if c == "'" and re.match(r"'(\\.|[^\\'])'", line[j:]):
                j += len(re.match(r"'(\\.|[^\\'])'", line[j:]).group(0))
                continue
            if c == ";" and not opened and depth == 0:
                return None
            if c == "{":
                depth += 1
                opened = True
            elif c == "}":
                depth -= 1
                if opened and depth == 0:
                    return i
            j += 1
    return None


def reason(lines, start):
    """The `//` comment above the function that says why it is long."""
    i = start - 1
    while i >= 0:
        s = lines[i].strip()
        if s.startswith("#[") or s.startswith("///"):
            i -= 1
            continue
        if s.startswith("//") and not s.startswith("///"):
            text = [s]
            k = i - 1
            while k >= 0 and lines[k].strip().startswith("//") and not lines[k].strip().startswith("///"):
                text.insert(0, lines[k].strip())
                k -= 1
            joined = " ".join(text)
            return joined if re.search(r"\blong\b", joined, re.I) else None
        return None
    return None


def test_module_start(lines):
    """Index of the first line of the file's `#[cfg(test)]` module (or past
    the end)."""
    for i, line in enumerate(lines[:-1]):
        if line.strip() == "#[cfg(test)]" and re.match(r"\s*(pub(\([^)]*\))?\s+)?mod\s+\w+", lines[i + 1]):
            return i
    return len(lines)


def is_test(lines, start):
    """Whether the attributes above the function make it a test."""
    i = start - 1
    while i >= 0 and (lines[i].strip().startswith("#[") or lines[i].strip().startswith("//")):
        if re.match(r"#\[(tokio::)?test\b", lines[i].strip()):
            return True
        i -= 1
    return False


def scan(root, limit):
    out = []
    for dirpath, _, files in os.walk(os.path.join(root, "crates")):
        if "/target" in dirpath:
            continue
        for f in sorted(files):
            if not f.endswith(".rs"):
                continue
            path = os.path.join(dirpath, f)
            rel_dir = os.path.relpath(dirpath, os.path.join(root, "crates"))
            if "/tests" in "/" + rel_dir.split(os.sep, 1)[-1] and rel_dir.split(os.sep)[1:2] == ["tests"]:
                continue
            lines = open(path, encoding="utf-8").read().split("\n")
            tests_from = test_module_start(lines)
            for i, line in enumerate(lines):
                m = FN.match(line)
                if not m or i >= tests_from or is_test(lines, i):
                    continue
                end = body_end(lines, i)
                if end is None:
                    continue
                n = end - i + 1
                if n > limit:
                    rel = os.path.relpath(path, root)
                    out.append((n, rel, i + 1, m.group(1), reason(lines, i)))
    return sorted(out, reverse=True)


def main():
    args = sys.argv[1:]
    limit = 80
    if "--limit" in args:
        k = args.index("--limit")
        limit = int(args[k + 1])
        del args[k : k + 2]
    show_all = "--all" in args
    args = [a for a in args if not a.startswith("--")]
    root = args[0] if args else os.path.join(os.path.dirname(__file__), "..")
    found = scan(root, limit)
    bad = [x for x in found if not x[4]]
    for n, rel, line, name, why in found:
        if why and not show_all:
            continue
        tag = f"  ({why})" if why else ""
        print(f"{n:5} {rel}:{line} {name}{tag}")
    print(f"{len(found)} functions over {limit} lines, {len(bad)} without a reason")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
