"""Benchmark the offline URL-list import: `manage.py import_issue_urls --no-fetch` over lists
of the study's shape (38,742 issue URLs in 33 files, `<repo>_<year>.txt` for 11 repositories
and 2023-2025; four of them on Gitee with alphanumeric numbers like IBD6YU).

Each run empties the issue and repository tables of its own database (default
annotator_bench_urls, created and migrated if missing) and times a fresh `manage.py` process
end to end: wall time and the child's CPU time (user + system). Target (issue 21): <= 10 s.

    .venv/bin/python bench/url_import_bench.py [--urls 38742] [--runs 5] [--db NAME]
    .venv/bin/python bench/url_import_bench.py --write-lists DIR [--urls N]  # lists only
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _django import migrated_database

ROOT = Path(__file__).resolve().parent.parent
# The study's eleven repositories (study-data README): (forge, owner, name, share of the URLs).
REPOSITORIES = [
    ("github", "hpcaitech", "ColossalAI", 0.08),
    ("github", "microsoft", "DeepSpeed", 0.10),
    ("github", "NVIDIA", "Megatron-LM", 0.05),
    ("github", "pytorch", "pytorch", 0.22),
    ("github", "tensorflow", "tensorflow", 0.14),
    ("github", "NVIDIA", "TensorRT-LLM", 0.07),
    ("github", "vllm-project", "vllm", 0.18),
    ("gitee", "mindspore", "mindformers", 0.05),
    ("gitee", "mindspore", "mindnlp", 0.02),
    ("gitee", "ascend", "MindSpeed", 0.03),
    ("gitee", "mindspore", "mindspore", 0.06),
]
YEARS = (2023, 2024, 2025)


def write_lists(folder: Path, total: int, seed: int = 21) -> int:
    """The lists, one URL per line, each issue in one year's list; returns the URL count."""
    rng = random.Random(seed)
    written = 0
    for index, (forge, owner, name, share) in enumerate(REPOSITORIES):
        n = total - written if index == len(REPOSITORIES) - 1 else round(total * share)
        if forge == "gitee":
            alphabet = string.ascii_uppercase + string.digits
            numbers = {"I" + "".join(rng.choices(alphabet, k=5)) for _ in range(n * 2)}
            chosen = sorted(numbers)[:n]
        else:
            chosen = [str(x) for x in sorted(rng.sample(range(1, n * 8), n))]
        per_year = [chosen[i::3] for i in range(3)]
        for year, numbers_of_year in zip(YEARS, per_year, strict=True):
            lines = [f"https://{forge}.com/{owner}/{name}/issues/{num}" for num in numbers_of_year]
            (folder / f"{name}_{year}.txt").write_text("\n".join(lines) + "\n")
        written += n
    return written


def run_once(env: dict[str, str], files: list[Path]) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "manage.py", "import_issue_urls", "--no-fetch", *map(str, files)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "out": done.stdout.strip()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--urls", type=int, default=38_742)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--db", default="annotator_bench_urls")
    parser.add_argument("--write-lists", type=Path, help="Only write the lists into this folder.")
    args = parser.parse_args()
    if args.write_lists:
        args.write_lists.mkdir(parents=True, exist_ok=True)
        print(write_lists(args.write_lists, args.urls), "URLs written to", args.write_lists)
        return
    env = migrated_database(args.db)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        count = write_lists(folder, args.urls)
        files = sorted(folder.glob("*.txt"))
        runs = []
        for _ in range(args.runs):
            truncate = "TRUNCATE ingest_repository CASCADE"
            subprocess.run(
                ["psql", "-h", "127.0.0.1", "-U", "postgres", "-q", "-d", args.db, "-c", truncate],
                check=True,
                capture_output=True,
            )
            runs.append(run_once(env, files))
        # And once more over the same lists with everything in place (nothing new).
        again = run_once(env, files)
    print(
        json.dumps(
            {
                "urls": count,
                "files": len(files),
                "runs": runs,
                "median_wall_s": statistics.median(r["wall_s"] for r in runs),
                "median_cpu_s": statistics.median(r["cpu_s"] for r in runs),
                "again_wall_s": again["wall_s"],
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
