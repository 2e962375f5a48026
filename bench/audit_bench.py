"""Benchmark the label audit (Dawid-Skene fit + ranking) on a study-sized synthetic project.

38,742 issues x 7 raters of known accuracy (0.95, 0.90, 0.85, 0.80, 0.70, 0.60 and one at
chance) over a taxonomy of 70 themes (10 question, 20 requirement, 40 bug) of uneven frequency;
the final label is the true theme except on 100 issues where it is planted wrong. Seeded once
into its own database (default annotator_bench_audit) through the importer, which writes with
COPY (`lib.sql.copy_rows`); each timed run is a fresh process that has imported numpy (as a web
worker has at boot) and times `agreement.audit.audit(project, top=100)`: loading the labels,
the fit and the ranking.

    .venv/bin/python bench/audit_bench.py [--runs 3] [--db NAME]

Target (issue 15): <= 30 s.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import resource
import statistics
import time
from pathlib import Path

from _django import migrated_database, run_stage, setup_stage

DATA = Path("/tmp/bench-audit")
PROJECT = "Audit study"
ISSUES = 38_742
THEMES = {"A": 10, "B": 20, "C": 40}
ACCURACIES = [0.95, 0.90, 0.85, 0.80, 0.70, 0.60, None]  # None: a uniform guess
PLANTED = 100
SEED = 20251125


def _django(db: str) -> None:
    setup_stage(db)


def _codes() -> list[str]:
    return [f"{t}.{i}" for t, n in THEMES.items() for i in range(1, n + 1)]


def generate(out: Path) -> tuple[list[Path], set[str]]:
    """The label files, and the URLs of the issues whose final label is planted wrong."""
    rng = random.Random(SEED)
    codes = _codes()
    same_type = {c: [d for d in codes if d[0] == c[0] and d != c] for c in codes}
    weights = [1 / (rank + 1) ** 0.7 for rank in range(len(codes))]  # uneven, as themes are
    rows = []
    planted_rows = set(rng.sample(range(ISSUES), PLANTED))
    planted: set[str] = set()
    for n in range(ISSUES):
        url = f"https://github.com/bench/audit/issues/{n + 1}"
        truth = rng.choices(codes, weights)[0]
        labels = []
        for accuracy in ACCURACIES:
            if accuracy is None:
                labels.append(rng.choice(codes))
            elif rng.random() < accuracy:
                labels.append(truth)
            elif rng.random() < 0.8:  # a wrong theme of the same type, mostly
                labels.append(rng.choice(same_type[truth]))
            else:
                labels.append(rng.choice([c for c in codes if c != truth]))
        final = truth
        if n in planted_rows:
            final = rng.choice([c for c in codes if c != truth])
            planted.add(url)
        rows.append([url, *labels, final])
    out.mkdir(parents=True, exist_ok=True)
    path = out / "audit.csv"
    with open(path, "w", encoding="utf-8-sig", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(
            ["Issue_URL", *(f"Label{i}" for i in range(1, len(ACCURACIES) + 1)), "Final_Label"]
        )
        writer.writerows(rows)
    (out / "planted.json").write_text(json.dumps(sorted(planted)))
    return [path], planted


def seed() -> dict:
    from annotator.models import Project
    from dataset.importer import import_labels
    from labeling.models import Resolution
    from taxonomy.loader import NodeSpec, store_version

    project = Project.objects.filter(name=PROJECT).first()
    if project is not None and Resolution.objects.filter(project=project).count() == ISSUES:
        return {"stage": "seed", "skipped": "already seeded"}
    if project is not None:
        raise SystemExit(f"{PROJECT!r} exists half-seeded: drop the bench database and rerun")
    types = [
        NodeSpec(
            code=t,
            name=f"Type {t}",
            level=1,
            children=[
                NodeSpec(code=f"{t}.{i}", name=f"Theme {t}.{i}", level=2) for i in range(1, n + 1)
            ],
        )
        for t, n in THEMES.items()
    ]
    version = store_version(types, "Audit bench taxonomy")
    Project.objects.create(name=PROJECT, taxonomy_version=version, annotations_per_issue=7)
    paths, _ = generate(DATA)
    start = time.perf_counter()
    report = import_labels(PROJECT, paths)
    return {
        "stage": "seed",
        "seconds": round(time.perf_counter() - start, 1),
        "annotations": report.created_annotations,
    }


def timed() -> dict:
    import config.wsgi  # noqa: F401  (a web worker has numpy imported at boot)
    from agreement.audit import audit
    from annotator.models import Project

    project = Project.objects.get(name=PROJECT)
    start, cpu = time.perf_counter(), time.process_time()
    result = audit(project, top=PLANTED)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    planted = set(json.loads((DATA / "planted.json").read_text()))
    return {
        "stage": "audit",
        "seconds": round(seconds, 3),
        # This process's CPU time (not PostgreSQL's): on a shared machine the wall time is
        # mostly waiting for a core.
        "cpu_seconds": round(cpu, 3),
        "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "iterations": result.iterations,
        "converged": result.converged,
        "classes": result.classes,
        "planted_in_top_100": sum(row.url in planted for row in result.issues),
        "accuracy": {a.pseudonym: round(a.accuracy, 3) for a in result.annotators},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--db", default="annotator_bench_audit")
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        _django(args.db)
        print(json.dumps(seed() if args.stage == "seed" else timed()))
        return

    env = migrated_database(args.db)
    run_stage(__file__, args.db, "seed", env)
    runs = [run_stage(__file__, args.db, "audit", env) for _ in range(args.runs)]
    print(
        f"\nmedian of {args.runs} runs: {statistics.median(r['seconds'] for r in runs):.2f} s, "
        f"CPU {statistics.median(r['cpu_seconds'] for r in runs):.2f} s, "
        f"peak {statistics.median(r['peak_mb'] for r in runs):.1f} MB"
    )


if __name__ == "__main__":
    main()
