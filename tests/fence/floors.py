#!/usr/bin/env python3
"""The house on its floors, drawn as folders from the #include lines.

Checks, over every tracked .h/.cc file (exit 0 when all hold):
  1. every include of a Strata header goes to the including folder's floor or
     below (README.md "Packages", floor by floor);
  2. the folder graph has no circle (includes of tests/, the testonly helpers
     at the top, are left out: a test beside the code may use them, and they
     stand above everything);
  3. floors 0 and 1 (util, layout, dtype, carrier) reach nothing above floor
     1, their tests included, and never tests/;
  4. no folder both provides the status macros and includes carrier/.

Usage: tests/fence/floors.py [REPO_ROOT]
"""
import collections
import os
import re
import subprocess
import sys

# Floor of each top-level folder. Folders on one floor may use each other in
# one direction only (check 2); the fraction orders floor 1 as drawn:
# layout <- dtype <- carrier.
FLOORS = {
    "util": 0,
    "layout": 1.0,
    "dtype": 1.1,
    "carrier": 1.2,
    "core": 2,
    "views": 3,
    "ops": 3,
    "proto": 3,
    "checkpoint": 3,
    "convert": 3.5,
    "distributed": 3.5,
    ".": 4,  # strata.h, the umbrella header
    "tools": 4,
    "python": 4,
    "tests": 5,
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(path):
    return path.split("/", 1)[0] if "/" in path else "."


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    os.chdir(root)
    files = subprocess.check_output(
        ["git", "ls-files", "*.h", "*.cc"], text=True).split()
    failures = []
    edges = collections.defaultdict(set)
    for path in files:
        source = folder_of(path)
        if source not in FLOORS:
            failures.append(f"{path}: folder {source}/ has no floor in floors.py")
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for included in INCLUDE.findall(text):
            if not os.path.exists(included):
                continue  # a system or generated header
            target = folder_of(included)
            if target == source:
                continue
            if target not in FLOORS:
                failures.append(f"{path}: includes {included}, folder without a floor")
                continue
            if FLOORS[source] <= 1.2 and (FLOORS[target] > 1.2 or target == "tests"):
                failures.append(
                    f"{path}: floor {FLOORS[source]} includes {included} "
                    f"(floor {FLOORS[target]})")
            elif target != "tests" and FLOORS[target] > FLOORS[source]:
                failures.append(
                    f"{path}: includes {included}, which runs up from floor "
                    f"{FLOORS[source]} to floor {FLOORS[target]}")
            if target != "tests":
                edges[source].add((target, path))
    # Check 2: no circle among folders (depth-first search for a back edge).
    state = {}

    def visit(folder, trail):
        state[folder] = "open"
        for target, path in sorted(edges[folder]):
            if state.get(target) == "open":
                cycle = trail[trail.index(target):] + [target]
                failures.append("circle " + " -> ".join(cycle) + f" (closed by {path})")
            elif target not in state:
                visit(target, trail + [target])
        state[folder] = "done"

    for folder in sorted(edges):
        if folder not in state:
            visit(folder, [folder])
    # Check 4: the status macros' folder includes nothing of carrier/.
    providers = {folder_of(p) for p in files
                 if re.search(r"#define STRATA_RETURN_IF_ERROR\b", open(p).read())}
    for folder in providers:
        for target, path in edges[folder]:
            if target == "carrier":
                failures.append(f"{path}: the status macros' folder includes carrier/")
    if not providers:
        failures.append("no file defines STRATA_RETURN_IF_ERROR")
    for line in failures:
        print("floors:", line)
    if failures:
        return 1
    print(f"floors: OK ({len(files)} files, {sum(len(v) for v in edges.values())} "
          f"folder imports, status macros in {', '.join(sorted(providers))}/)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
