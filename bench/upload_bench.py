"""Benchmark the upload of a file of issues: `manage.py upload_issues` (what the upload page's
Celery task runs) over a CSV of a mailing-list archive (default 10,000 rows: url, title, body,
labels, created_at), as a dry run, as an import into an empty database, and as the same import
again (every issue already stored: updated).

Each run empties the repository tables (and so the issues and queue entries) of its own
database (default annotator_bench_upload, created and migrated if missing, with the study
taxonomy and one project) and times a fresh `manage.py` process end to end: wall time and the
child's CPU time (user + system).

    .venv/bin/python bench/upload_bench.py [--rows 10000] [--runs 3] [--db NAME]
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

from _django import migrated_database

ROOT = Path(__file__).resolve().parent.parent
MAKE_PROJECT = (
    "from annotator.models import Project; from taxonomy.loader import load_study_taxonomy; "
    "v = load_study_taxonomy(only_if_missing=True); "
    "print(Project.objects.get_or_create(name='Upload bench', defaults={'taxonomy_version': v})"
    "[0].pk)"
)


def write_csv(path: Path, rows: int) -> int:
    lines = ["url,title,body,labels,created_at"]
    for n in range(1, rows + 1):
        lines.append(
            f"https://lists.example.org/ml/{n},Loss spikes after resume {n},"
            f"bf16 on 8 GPUs; thread {n},ml; bug,2024-01-{n % 28 + 1:02d}"
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path.stat().st_size


def run_once(env: dict[str, str], *args: str) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "manage.py", "upload_issues", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--db", default="annotator_bench_upload")
    args = parser.parse_args()
    env = migrated_database(args.db)
    project = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", MAKE_PROJECT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[-1]
    results: dict[str, list[dict]] = {"dry_run": [], "import": [], "again": []}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "archive.csv"
        size = write_csv(path, args.rows)
        for _ in range(args.runs):
            truncate = "TRUNCATE ingest_repository CASCADE"
            subprocess.run(
                ["psql", "-h", "127.0.0.1", "-U", "postgres", "-q", "-d", args.db, "-c", truncate],
                check=True,
                capture_output=True,
            )
            results["dry_run"].append(run_once(env, project, str(path), "--dry-run"))
            results["import"].append(run_once(env, project, str(path)))
            results["again"].append(run_once(env, project, str(path)))
    summary = {
        name: {
            "median_wall_s": statistics.median(r["wall_s"] for r in runs),
            "median_cpu_s": statistics.median(r["cpu_s"] for r in runs),
            "runs": runs,
        }
        for name, runs in results.items()
    }
    print(json.dumps({"rows": args.rows, "bytes": size, **summary}, indent=1))


if __name__ == "__main__":
    main()
