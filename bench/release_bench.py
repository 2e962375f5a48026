"""Benchmark building a release of a study of the full study's shape (38,742 final issues,
7 raters: bench/dataset_generate.py), with every file and its metadata.

Uses its own database (default annotator_bench_release, created if missing) and a temporary
EXPORT_ROOT, so it never touches a development or test database or real releases. Each run is a
fresh process building a new version (earlier bench releases are emptied first), so peak memory
(ru_maxrss) is the build's own.

    .venv/bin/python bench/release_bench.py [--runs 3] [--db NAME] [--times K]

`--times K`: a study K times the size (bench/dataset_generate.py --times K); issue #30 item 5
asks for a release <= 300 s and <= 1 GB at K = 10. The database may be dataset_bench.py's of
the same K: its imported study is used as it is.

No target in issue 16; the export's (every format <= 30 s, < 300 MB) is the yardstick, since a
release writes the export's formats plus final_labels.csv, changes.csv and the metadata files.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _django import backend_cpu, migrated_database, run_stage, setup_stage

ROOT = Path(__file__).resolve().parent.parent
DATA = Path("/tmp/bench-dataset")
PROJECT = "Synthetic study"


def _django(db: str) -> None:
    setup_stage(db)


def data_dir(times: int) -> Path:
    """Where the synthetic study `times` times the size is written (as dataset_bench.py)."""
    return DATA if times == 1 else Path(f"{DATA}-x{times}")


def prepare(data: Path = DATA) -> dict:
    """Import the synthetic study once (kept between runs)."""
    from annotator.models import Project
    from dataset.importer import import_labels

    if not Project.objects.filter(name=PROJECT).exists():
        report = import_labels(PROJECT, sorted(data.glob("*.csv")))
        return {"imported_issues": report.created_issues}
    return {"imported_issues": 0}


def build(run: int) -> dict:
    from django.conf import settings
    from django.db import connection

    import config.wsgi  # noqa: F401  (a worker has the statistics libraries loaded)
    from annotator.models import Project
    from dataset.releases import build_release, create_release

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE dataset_release")
    project = Project.objects.get(name=PROJECT)
    with tempfile.TemporaryDirectory() as root:
        settings.EXPORT_ROOT = Path(root)
        marks: list[tuple[str, float]] = []
        cpu_start, pg_start = time.process_time(), backend_cpu()
        start = time.perf_counter()
        release = build_release(
            create_release(project, None, f"1.0.{run}").pk,
            progress=lambda step, *_: marks.append((step, time.perf_counter())),
        )
        end = time.perf_counter()
        seconds = end - start
        cpu, pg_cpu = time.process_time() - cpu_start, backend_cpu() - pg_start
        # Seconds per step, from the build's progress calls (one before each step; "zip"
        # includes the ZIP, its SHA-256 and the release's save).
        steps: dict[str, float] = {}
        for (step, at), (_, after) in zip(marks, [*marks[1:], ("end", end)], strict=True):
            kind = step.split("/")[0] if "/" in step else step
            steps[kind] = round(steps.get(kind, 0.0) + after - at, 3)
        size = release.size
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "stage": "release",
        "seconds": round(seconds, 3),
        "cpu": round(cpu, 2),
        "pg_cpu": round(pg_cpu, 2),
        "peak_mb": round(peak, 1),
        "zip_bytes": size,
        "issues": release.counts["issues"],
        "files": len(release.manifest["files"]) + 1,
        "steps": steps,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--db", default="annotator_bench_release")
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    parser.add_argument("--run", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--times", type=int, default=1)
    args = parser.parse_args()
    data = data_dir(args.times)
    if args.stage:
        _django(args.db)
        result = prepare(data) if args.stage == "prepare" else build(args.run)
        print(json.dumps(result))
        return

    env = migrated_database(args.db)
    if not any(data.glob("*.csv")):
        subprocess.run(
            [sys.executable, "bench/dataset_generate.py", str(data), "--times", str(args.times)],
            cwd=ROOT,
            env=env,
            check=True,
        )
    stages = [("prepare", 0)] + [("build", n) for n in range(1, args.runs + 1)]
    runs = []
    for name, n in stages:
        result = run_stage(
            __file__, args.db, name, env, "--run", str(n), "--times", str(args.times)
        )
        if name == "build":
            runs.append(result)
    seconds = statistics.median(r["seconds"] for r in runs)
    peak = statistics.median(r["peak_mb"] for r in runs)
    print(f"\nmedian of {len(runs)} runs: release {seconds:.2f} s, peak {peak:.1f} MB")


if __name__ == "__main__":
    main()
