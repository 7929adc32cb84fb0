#!/usr/bin/env python3
"""docs/architecture.md's module map names only files that exist, and every module it should:
each top-level module of the plugin (src/, src/slurm/), the engine, the admin tools and the
command line. Run by the test command (lint "module map"); prints what is wrong and exits 1.
"""
import glob
import pathlib
import re
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "architecture.md"


def module_map(text):
    """The lines of the "## Module map" section."""
    start = text.index("\n## Module map\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else None].splitlines()


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def ticked(cell):
    return re.findall(r"`([^`]+)`", cell)


def exists(path):
    return bool(glob.glob(str(REPO / path)))


def main():
    lines = module_map(DOC.read_text())
    rows = [cells(l) for l in lines if l.startswith("| `")]
    problems, named = [], set()
    for row in rows:
        first = row[0]
        names = ticked(first)
        if len(row) == 4:  # the crate table
            if first.startswith("`nvl72-cli`"):
                named.update(f"crates/cli/src/{f}" for f in ticked(row[2]) if f.endswith(".rs"))
            continue
        if not names:
            continue
        if names[0].startswith("src/"):
            paths = [names[0].rstrip("/")]
            if names[0] == "src/slurm/":
                paths += [f"src/slurm/{n}.rs" for n in names[1:]]
        else:
            if "crate `nvl72-admin`" in first:
                base = "crates/admin/src"
            elif "nvl72-sim" in first:
                base = "crates/sim/src"
            else:
                base = "crates/engine/src"
            head = names[0]
            if head == "sim":
                paths = [f"{base}/lib.rs"]
            elif head == "replay":
                paths = [f"{base}/replay"] + [f"{base}/replay/{n}.rs" for n in names[2:]]
            else:
                paths = [f"{base}/{head}.rs"]
            paths += [f"{base}/{n}" for n in names[1:] if n.endswith(".rs") and head != "replay"]
        for p in paths:
            named.add(p)
            if not exists(p):
                problems.append(f"docs/architecture.md names {p}, which does not exist")
    wanted = []
    for pattern, skip in (("src/*.rs", "src/lib.rs"), ("src/slurm/*.rs", "src/slurm/mod.rs"),
                          ("crates/engine/src/*.rs", "crates/engine/src/lib.rs"),
                          ("crates/admin/src/*.rs", "crates/admin/src/lib.rs"),
                          ("crates/cli/src/*.rs", "crates/cli/src/main.rs")):
        wanted += [str(p.relative_to(REPO)) for p in sorted(REPO.glob(pattern)) if str(p.relative_to(REPO)) != skip]
    for w in wanted:
        if w not in named and not (w.startswith("src/") and w.replace(".rs", "") in named):
            problems.append(f"docs/architecture.md's module map does not name {w}")
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print(f"module map: {len(named)} files named, every one exists; no module left out")


if __name__ == "__main__":
    main()
