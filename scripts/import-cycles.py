#!/usr/bin/env python3
"""Finds import cycles among the files of a Rust crate's src/ (tests excluded).

Each file is a node; an edge a -> b means a names `crate::<path>` (in a `use` or inline)
that resolves to file b. `#[cfg(test)]` modules are skipped: a test may use anything.
Exit status 1 and the cycles printed if there are any.

    scripts/import-cycles.py crates/zkpipe-engine/src crates/zkpipe-core/src
"""
import os
import re
import sys


def module_files(src):
    """Module path (tuple) -> file, for every .rs file under src."""
    files = {}
    for root, _, names in os.walk(src):
        for n in names:
            if not n.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(root, n), src)[:-3].split(os.sep)
            if rel[-1] == "mod":
                rel = rel[:-1]
            if rel in (["lib"], ["main"]):
                rel = []
            if rel and rel[0] == "bin":
                continue
            files[tuple(rel)] = os.path.join(root, n)
    return files


def strip_tests(text):
    """The text without `#[cfg(test)] mod … { … }` blocks and comments."""
    text = re.sub(r"//[^\n]*", "", text)
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i : m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def crate_paths(text, mod):
    """Every crate::a::b::… path named (super:: and self:: resolved from module `mod`),
    including those inside `use crate::{a, b::c}`."""
    paths = []
    for m in re.finditer(r"\b(crate|super|self)::((?:\w+::)*\w+)(::\{)?", text):
        head, rest = m.group(1), m.group(2).split("::")
        base = resolve_relative(head, rest, mod)
        if base is None:
            continue
        if m.group(3):
            depth, j, start = 1, m.end(), m.end()
            while j < len(text) and depth:
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
            inner = text[start : j - 1]
            for part in re.split(r",", re.sub(r"\{[^{}]*\}", "", inner)):
                part = part.strip().split(" as ")[0]
                if part and part != "self":
                    paths.append(base + part.split("::"))
            paths.append(base)
        else:
            paths.append(base)
    return paths


def resolve_relative(head, rest, mod):
    """A crate-absolute path for `head::rest` named in module `mod`."""
    if head == "crate":
        return rest
    base = list(mod) if head == "self" else list(mod[:-1])
    if head == "super" and not mod:
        return None
    while rest and rest[0] == "super":
        if not base:
            return None
        base, rest = base[:-1], rest[1:]
    return base + rest


def resolve(path, files):
    """The longest module prefix of path that is a file."""
    for k in range(len(path), 0, -1):
        if tuple(path[:k]) in files:
            return tuple(path[:k])
    return None


def cycles(src):
    files = module_files(src)
    graph = {}
    for mod, f in files.items():
        text = strip_tests(open(f, encoding="utf-8").read())
        deps = set()
        for p in crate_paths(text, mod):
            t = resolve(p, files)
            if t is None or t == mod:
                continue
            deps.add(t)
        graph[mod] = deps
    # Tarjan's strongly connected components.
    index, low, stack, on, comps, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
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
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return [[files[m] for m in c] for c in comps], len(files)


def main():
    bad = False
    for src in sys.argv[1:] or ["crates/zkpipe-engine/src", "crates/zkpipe-core/src"]:
        comps, count = cycles(src)
        for c in comps:
            bad = True
            print(f"cycle in {src}: " + " <-> ".join(os.path.relpath(f, src) for f in c))
        if not comps:
            print(f"{src}: {count} files, no import cycle")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
