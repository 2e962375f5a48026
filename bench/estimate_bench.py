"""`manage.py estimate` at the study's size: 38,742 issues with 7 labels and a final each
(`bench/dataset_generate.py`, imported), and a simulated machine rater of about 80 % theme
accuracy with a label on every issue. Each command is timed as a whole process (Django's
start, ppi-python's import, the reads and the estimates), as a researcher runs it.

    .venv/bin/python bench/estimate_bench.py [--runs 5] [--db annotator_bench_estimate]

Target (issue 29): `estimate` at the study's size in <= 5 s.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _django import migrated_database, setup_stage

ROOT = Path(__file__).resolve().parent.parent
DATA = Path("/tmp/bench-dataset")
PROJECT = "Synthetic study"
RATER = "sim80"
COMMANDS = {
    "type, replayed sample of 2,000": ["--level", "type", "--replay-sample", "2000", "--seed", "1"],
    "theme by repository, replayed 2,000": [
        "--level", "theme", "--by", "repository", "--replay-sample", "2000", "--seed", "1",
    ],
    "type by year, plan ±2 pp": [
        "--level", "type", "--by", "year", "--replay-sample", "2000", "--plan", "0.02",
    ],
    # After `draw_sample --size 2000` (timed once): the active sample, weighted by 1/π.
    "type, active draw of 2,000": ["--level", "type"],
    "theme by repository, active draw of 2,000": ["--level", "theme", "--by", "repository"],
}  # fmt: skip


def prepare(db: str) -> None:
    """Import the synthetic study and give the simulated rater a label on every issue (once)."""
    setup_stage(db)
    from annotator.models import Project
    from dataset.importer import import_labels
    from labeling.models import MachineLabel, MachineRater, Resolution

    if not Project.objects.filter(name=PROJECT).exists():
        import_labels(PROJECT, sorted(DATA.glob("*.csv")))
    project = Project.objects.get(name=PROJECT)
    rater, made = MachineRater.objects.get_or_create(
        project=project, name=RATER, defaults={"kind": "external", "version": 1}
    )
    if not made:
        return
    rng = random.Random(1)
    finals = list(
        Resolution.objects.filter(project=project, is_current=True).values_list(
            "issue_id", "issue_type_id", "theme_id"
        )
    )
    themes = sorted({(t, th) for _, t, th in finals})
    labels = []
    for issue_id, type_id, theme_id in finals:
        if rng.random() >= 0.8:
            type_id, theme_id = rng.choice([x for x in themes if x != (type_id, theme_id)])
        labels.append(
            MachineLabel(
                rater=rater, issue_id=issue_id, issue_type_id=type_id, theme_id=theme_id,
                confidence=rng.random(),
            )
        )  # fmt: skip
    MachineLabel.objects.bulk_create(labels, batch_size=5000)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--db", default="annotator_bench_estimate")
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.prepare:
        prepare(args.db)
        return
    env = migrated_database(args.db)
    if not DATA.exists():
        subprocess.run(
            [sys.executable, "bench/dataset_generate.py", str(DATA)], cwd=ROOT, env=env, check=True
        )
    subprocess.run([sys.executable, __file__, "--db", args.db, "--prepare"], env=env, check=True)
    drawn = False
    for name, extra in COMMANDS.items():
        if "active" in name and not drawn:
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "manage.py", "draw_sample", "--project", PROJECT, "--rater",
                 RATER, "--size", "2000", "--seed", "1"],
                cwd=ROOT, env=env, check=True, capture_output=True, text=True,
            )  # fmt: skip
            print(f"draw_sample --size 2000: {time.perf_counter() - start:.2f} s (one run)")
            drawn = True
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            out = subprocess.run(
                [sys.executable, "manage.py", "estimate", "--project", PROJECT, "--rater", RATER,
                 "--json", *extra],
                cwd=ROOT, env=env, check=True, capture_output=True, text=True,
            )  # fmt: skip
            times.append(time.perf_counter() - start)
        report = json.loads(out.stdout)
        print(
            f"{name}: median {statistics.median(times):.2f} s (min {min(times):.2f}, max "
            f"{max(times):.2f}; {args.runs} runs); n_total {report['n_total']}, "
            f"{len(report['estimates'])} estimates",
            flush=True,
        )


if __name__ == "__main__":
    main()
