"""Python function calls per labeling cycle: a figure of the hot path that host noise cannot move.

    .venv/bin/python bench/cycle_calls.py --save /tmp/after.json
    .venv/bin/python bench/cycle_calls.py --root /tmp/before --compare /tmp/after.json

`--root`: another checkout to measure, e.g. a `git worktree` of an older commit.

The `cost` scenario of `labeling_load.py` reports CPU milliseconds per cycle, which on a shared
host swing by 2x from one minute to the next. This counts the function calls of the same cycle
(K annotators in turn: next issue, then submit, through the WSGI application in process) under
cProfile, which is the same on a busy host as on a quiet one, and lists the functions whose
call count differs most from another run's listing (`--compare FILE`, written by `--save`).

It runs the given checkout's own `bench/labeling_load.py` (its setup and its URLs), on that
script's database (BENCH_DATABASE_URL; build it first with `labeling_load.py setup`).
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import json
import os
import pstats
import random
import re
import sys
from pathlib import Path


def count_calls(root: Path, cycles: int) -> tuple[int, dict[str, int]]:
    """Total calls per cycle, and calls per cycle of each function (`file:line(name)`)."""
    # The checkout's packages must win over this tree's (the current directory and the
    # editable install both point here).
    os.chdir(root)
    sys.path[:0] = [str(root / "bench"), str(root)]
    load = importlib.import_module("labeling_load")
    load.django_setup()
    import taxonomy

    assert Path(taxonomy.__file__).is_relative_to(root), taxonomy.__file__
    from annotator.models import Project

    project = Project.objects.get(name=load.PROJECT)
    load.analyze()
    names = [f"bench-{n}" for n in range(load.K)]
    keys = load.sessions(names)
    labels = load.label_payload(project.pk)
    rng = random.Random(1)
    turn = [0]

    def cycle() -> None:
        key = keys[names[turn[0] % load.K]]
        turn[0] += 1
        load._label_one(key, project.pk, labels, rng)

    for _ in range(5 * load.K):  # warm: imports, connections, prepared statements, caches
        cycle()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(cycles):
        cycle()
    profile.disable()
    stats = pstats.Stats(profile)
    per_function = {}
    for (filename, line, name), (_, ncalls, *_rest) in stats.stats.items():  # type: ignore[attr-defined]
        # Site-packages paths differ between checkouts only by their prefix.
        short = filename.split("site-packages/")[-1].removeprefix(str(root) + "/")
        per_function[f"{short}:{line}({name})"] = ncalls / cycles
    return round(stats.total_calls / cycles), per_function  # type: ignore[attr-defined]


def _by_name(counts: dict[str, float]) -> dict[str, float]:
    """Calls per `module file:function`, without line numbers (a moved function keeps its
    name) or object addresses (a built-in's repr carries one)."""
    merged: dict[str, float] = {}
    for key, n in counts.items():
        path, _, rest = key.partition(":")
        name = re.sub(r" at 0x[0-9a-f]+", "", rest.partition("(")[2].removesuffix(")"))
        short = f"{path.rsplit('/', 1)[-1]}:{name}"
        merged[short] = merged.get(short, 0) + n
    return merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--cycles", type=int, default=140)
    parser.add_argument("--save", type=Path, help="write the per-function counts as JSON")
    parser.add_argument("--compare", type=Path, help="a --save file to list differences with")
    args = parser.parse_args()
    total, per_function = count_calls(args.root.resolve(), args.cycles)
    print(f"{args.root}: {total} Python function calls per cycle ({args.cycles} cycles)")
    if args.save:
        args.save.write_text(json.dumps({"total": total, "functions": per_function}))
    if args.compare:
        other = json.loads(args.compare.read_text())["functions"]
        mine, theirs = _by_name(per_function), _by_name(other)
        diffs = sorted(
            ((mine.get(k, 0) - theirs.get(k, 0), k) for k in mine.keys() | theirs.keys()),
            key=lambda d: -abs(d[0]),
        )
        print("calls per cycle, this run minus the compared one:")
        for delta, key in diffs[:30]:
            if abs(delta) >= 0.5:
                print(f"  {delta:+8.1f}  {key}")


if __name__ == "__main__":
    main()
