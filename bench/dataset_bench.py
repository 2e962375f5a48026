"""Benchmark import, agreement and exports on a synthetic study of the full study's shape.

Uses its own database (default annotator_bench_dataset, created if missing) so it never
touches a development or test database. Each stage runs in a fresh process, so peak memory
(ru_maxrss) is the stage's own.

    .venv/bin/python bench/dataset_bench.py [--runs 3] [--db NAME] [--times K] [--stages ...]

`--times K` benchmarks a study K times the size (bench/dataset_generate.py --times K, written
to /tmp/bench-dataset-xK); issue #30 item 5's targets at K = 10: import <= 100 s, agreement
<= 20 s, every export format <= 200 s, memory of any process <= 1 GB.

Targets (issue 5): import <= 30 s, full agreement report <= 2 s from cold, every export
format together <= 30 s with peak memory < 300 MB.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _django import backend_cpu, migrated_database, run_stage, setup_stage

ROOT = Path(__file__).resolve().parent.parent
DATA = Path("/tmp/bench-dataset")


def data_dir(times: int) -> Path:
    """Where the synthetic study `times` times the size is written."""
    return DATA if times == 1 else Path(f"{DATA}-x{times}")


PROJECT = "Synthetic study"


def _django(db: str) -> None:
    setup_stage(db, debug=True, broker="redis://127.0.0.1:6379/6")


def _reset() -> None:
    """Empty the bench database's study data (not the taxonomy) so each import starts fresh."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE annotator_project, ingest_repository, dataset_exportjob CASCADE;"
            "DELETE FROM auth_user WHERE username LIKE 'imported-%%';"
        )


def format_seconds(marks: list[tuple[str, float]], end: float) -> dict[str, float]:
    """Seconds per export format from build_zip's progress calls (one before each file, and
    "done" at the end): the study CSVs together, the three taxonomy files together, then each
    other file; the last file's figure (machine_labels.csv) includes the manifest (its counts
    and unmapped labels) and the ZIP's close, which come before "done"."""
    seconds: dict[str, float] = {}
    for (name, at), (_, after) in zip(marks, [*marks[1:], ("end", end)], strict=True):
        kind = name.split("/")[0] if "/" in name else name
        kind = {"labels": "study_csv"}.get(kind, kind)
        seconds[kind] = round(seconds.get(kind, 0.0) + after - at, 3)
    return seconds


def stage(name: str, data: Path = DATA) -> dict:
    from django.core.cache import cache

    from annotator.models import Project

    if name in ("agreement", "export"):
        # The statistics libraries are imported where agreement computes (issue 13); a web
        # worker imports them at boot (config.wsgi), so "from cold" means the Django cache,
        # not the ~1.5 s of imports a process pays once.
        import config.wsgi  # noqa: F401

    # CPU seconds of this process and of its PostgreSQL backend: steadier than the wall time
    # on a shared host. They include the stage's setup (the import's emptying of the project).
    cpu_start, pg_start = time.process_time(), backend_cpu()
    start = time.perf_counter()
    extra: dict[str, object]
    if name == "import":
        from dataset.importer import import_labels

        _reset()
        start = time.perf_counter()
        report = import_labels(PROJECT, sorted(data.glob("*.csv")))
        extra = {"annotations": report.created_annotations, "issues": report.created_issues}
    elif name == "agreement":
        from agreement.measures import agreement_report

        cache.clear()
        project = Project.objects.get(name=PROJECT)
        start = time.perf_counter()
        report = agreement_report(project)
        extra = {"kappa": {k: round(v["kappa"], 4) for k, v in report["types"].items()}}
    elif name == "export":
        from dataset.exports import build_zip

        project = Project.objects.get(name=PROJECT)
        cache.clear()  # the agreement CSV is computed from cold inside the export
        out = Path(f"{data}-export.zip")
        marks: list[tuple[str, float]] = []
        start = time.perf_counter()
        manifest = build_zip(
            project, out, progress=lambda f, *_: marks.append((f, time.perf_counter()))
        )
        extra = {
            "zip_bytes": out.stat().st_size,
            "files": len(manifest["files"]),
            "formats": format_seconds(marks, time.perf_counter()),
        }
    else:
        raise SystemExit(f"unknown stage {name}")
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    pg_cpu = backend_cpu() - pg_start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "stage": name,
        "seconds": round(seconds, 3),
        "cpu": round(cpu, 2),
        "pg_cpu": round(pg_cpu, 2),
        "peak_mb": round(peak, 1),
        **extra,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--db", default="annotator_bench_dataset")
    parser.add_argument("--times", type=int, default=1)
    parser.add_argument(
        "--stages", nargs="+", default=["import", "agreement", "export"],
        choices=["import", "agreement", "export"],
        help="the stages to run, in this order (agreement and export need an imported study)",
    )  # fmt: skip
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    args = parser.parse_args()
    data = data_dir(args.times)
    if args.stage:
        _django(args.db)
        print(json.dumps(stage(args.stage, data)))
        return

    env = migrated_database(args.db, debug=True, broker=True)
    subprocess.run(
        [sys.executable, "bench/dataset_generate.py", str(data), "--times", str(args.times)],
        cwd=ROOT,
        env=env,
        check=True,
    )
    results: dict[str, list[dict]] = {name: [] for name in args.stages}
    for _ in range(args.runs):
        for name in results:
            results[name].append(
                run_stage(__file__, args.db, name, env, "--times", str(args.times))
            )
    print("\nmedians of", args.runs, "runs:")
    for name, runs in results.items():
        print(
            f"  {name:<10} {statistics.median(r['seconds'] for r in runs):7.2f} s   "
            f"CPU {statistics.median(r['cpu'] for r in runs):6.1f} s "
            f"+ PostgreSQL {statistics.median(r['pg_cpu'] for r in runs):6.1f} s   "
            f"peak {statistics.median(r['peak_mb'] for r in runs):6.1f} MB"
        )


if __name__ == "__main__":
    main()
