#!/usr/bin/env python3
"""Prints the import graph between the workspace's Rust files and finds cycles.

Each crate sits on a layer (LAYERS below); a crate may use only crates on
lower layers, so the dependencies point one way: cli -> lab -> (fio, trace,
sysbench, mpi) -> (bench, reader) -> iolab. An edge from a file to a crate on
its own or a higher layer is an upward edge, and fails the check, as does a
crate missing from the table.

Each file is a module (crates/C/src/a/b.rs is C::a::b; mod.rs and lib.rs
are their folder's module). An edge A -> B means A names a path into B
(`use crate::x::y`, `super::x`, `iolab_bench::x::y`, or such a path in
code); a path is resolved to the longest module prefix that is a file.
A parent declaring `mod child;` is not an edge, nor is a `pub use`
re-export (it forwards names); a path through a re-exported name leads to
the file that defines it. Exit status 1 when there is a cycle, so CI can run
it.

Usage: scripts/import-graph.py [--quiet] [ROOT]
"""
import os
import re
import sys

# Layer of each crate: a crate may use crates of lower layers only. Test-only
# crates (those that switch a feature on for workspace builds) are not listed:
# they hold no code that the graph reads.
LAYERS = {
    "iolab": 0,
    "iolab_faultfs": 1,
    "iolab_reader": 1,
    "iolab_bench": 1,
    "iolab_fio": 2,
    "iolab_trace": 2,
    "iolab_sysbench": 2,
    "iolab_mpi": 2,
    "iolab_py": 2,
    "iolab_lab": 3,
    "iolab_cli": 4,
}
TEST_ONLY = ("iolab_mpi_tests", "iolab_cuda_tests", "iolab_py_tests")


def crates(root):
    """Maps crate names (with _) to their folders under crates/."""
    out = {}
    for d in sorted(os.listdir(os.path.join(root, "crates"))):
        if os.path.exists(os.path.join(root, "crates", d, "Cargo.toml")):
            out[d.replace("-", "_")] = d
    return out


CRATES = crates(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def modules(root):
    """Maps module path tuples to files."""
    out = {}
    for name, folder in CRATES.items():
        if name in TEST_ONLY:
            continue
        src = os.path.join(root, "crates", folder, "src")
        for dirpath, _, files in os.walk(src):
            for f in files:
                if not f.endswith(".rs"):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), src)[:-3].split(os.sep)
                if rel[-1] in ("mod", "lib", "main"):
                    rel = rel[:-1]
                out[(name,) + tuple(rel)] = os.path.join(dirpath, f)
    return out


def strip(text):
    """Drops comments, strings and inline test modules (`mod tests { .. }`,
    whose `super` is the file itself)."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    while True:
        m = re.search(r"\bmod\s+\w+\s*\{", text)
        if not m:
            return text
        depth, i = 0, m.end() - 1
        while i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                break
            i += 1
        text = text[: m.start()] + text[i + 1 :]


def expand(path):
    """Expands one level of braces: a::{b, c::d} -> a::b, a::c::d."""
    m = re.match(r"^(.*?)::\{(.*)\}$", path.strip(), re.S)
    if not m:
        return [path.strip()]
    head, body = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    res = []
    for p in parts:
        p = p.strip()
        if p:
            res += expand(head + "::" + p)
    return res


def resolve(mod, path, mods, reexports=None):
    segs = [s.strip() for s in path.split("::") if s.strip()]
    segs = [re.sub(r"\s+as\s+\w+$", "", s) for s in segs]
    if not segs:
        return None
    base = list(mod)
    if segs[0] == "crate":
        base, segs = [mod[0]], segs[1:]
    elif segs[0] in CRATES:
        base, segs = [segs[0]], segs[1:]
    elif segs[0] in ("super", "self"):
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
    elif tuple(mod) + (segs[0],) in mods:
        pass  # a child module, named relative to this one
    else:
        return None
    full = tuple(base + segs)
    for n in range(len(full), 0, -1):
        if full[:n] in mods:
            target = full[:n]
            rest = full[n:]
            if reexports and rest and (target, rest[0]) in reexports:
                return reexports[(target, rest[0])]
            return target
    return None


def graph(root):
    mods = modules(root)
    edges = {m: set() for m in mods}
    texts = {m: strip(open(f, encoding="utf-8").read()) for m, f in mods.items()}
    # Names each module re-exports (`pub use x::{A, B}`), and from where.
    reexports = {}
    for _ in range(3):  # re-exports of re-exports
        for m, text in texts.items():
            for u in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", text):
                for p in expand(u.group(1)):
                    last = re.sub(r".*\bas\s+", "", p).split("::")[-1].strip()
                    t = resolve(m, p, mods, reexports)
                    if t and t != m and last != "*":
                        reexports[(m, last)] = t
    path_re = re.compile(r"\b(?:crate|super|self|" + "|".join(sorted(CRATES, key=len, reverse=True)) + r")(?:::\w+)+")
    for m, f in mods.items():
        text = re.sub(r"\bpub(?:\([^)]*\))?\s+use\s+[^;]+;", "", texts[m])
        paths = []
        for u in re.finditer(r"\buse\s+([^;]+);", text):
            paths += expand(u.group(1))
        text = re.sub(r"\buse\s+[^;]+;", "", text)
        text = re.sub(r"\bmod\s+\w+\s*;", "", text)
        paths += path_re.findall(text)
        # Paths that start at a child module (`plan::plans(..)`).
        for p in re.findall(r"(?<![:\w])(\w+(?:::\w+)+)", text):
            if m + (p.split("::")[0],) in mods:
                paths.append(p)
        for p in paths:
            t = resolve(m, p, mods, reexports)
            if t and t != m:
                edges[m].add(t)
    return mods, edges


def cycles(edges):
    """Strongly connected components with more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    quiet = "--quiet" in sys.argv
    root = args[0] if args else os.path.join(os.path.dirname(__file__), "..")
    mods, edges = graph(root)
    name = lambda m: "::".join(m)
    if not quiet:
        for m in sorted(edges):
            if edges[m]:
                print(f"{name(m)} -> {', '.join(name(t) for t in sorted(edges[m]))}")
    cyc = cycles(edges)
    up = upward(edges)
    n_edges = sum(len(v) for v in edges.values())
    print(f"{len(mods)} files, {n_edges} edges, {len(cyc)} cycles, {len(up)} upward edges")
    for c in cyc:
        print("cycle: " + " <-> ".join(name(m) for m in c))
    for a, b in up:
        print(f"upward: {name(a)} -> {name(b)}")
    for c in sorted(set(CRATES) - set(LAYERS) - set(TEST_ONLY)):
        print(f"unlayered crate: {c} (give it a layer in LAYERS)")
    bad = set(CRATES) - set(LAYERS) - set(TEST_ONLY)
    return 1 if cyc or up or bad else 0


def upward(edges):
    """Edges from one crate to another on the same or a higher layer."""
    out = []
    for a, ts in edges.items():
        for b in ts:
            if a[0] != b[0] and LAYERS.get(b[0], 99) >= LAYERS.get(a[0], -1):
                out.append((a, b))
    return sorted(out)


if __name__ == "__main__":
    sys.exit(main())
