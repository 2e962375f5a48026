"""Benchmark the lead's pages on an imported study: the issue list and the dashboard.

Run after `bench/dataset_bench.py --times K --stages import` has imported the synthetic study
into `--db` (a study K times the published one); issue #30 item 5's target at K = 10 is
<= 300 ms for the dashboard and every issue list page. Each case is the function the page
calls (`labeling.issue_list.issue_page` for page 1: the count, 50 rows, their final labels;
`labeling.dashboard.dashboard`), one warm-up, then the median of `--runs`; wall and CPU (this
process plus its PostgreSQL backend).

    .venv/bin/python bench/study_pages.py --db annotator_scale_x10 [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from _django import backend_cpu, setup_stage

PROJECT = "Synthetic study"


def timed(fn: Callable[[], object], runs: int) -> dict[str, Any]:
    fn()  # warm-up: plans, the cache of the taxonomy, the connection
    walls, cpus = [], []
    for _ in range(runs):
        cpu, pg, started = time.process_time(), backend_cpu(), time.perf_counter()
        fn()
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((time.process_time() - cpu + backend_cpu() - pg) * 1000)
    return {
        "wall_ms": round(statistics.median(walls), 1),
        "cpu_ms": round(statistics.median(cpus), 1),
        "runs_ms": [round(w, 1) for w in walls],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--project", default=PROJECT)
    args = parser.parse_args()
    setup_stage(args.db)

    from django.db import connection

    from annotator.models import Project
    from labeling import issue_list
    from labeling.dashboard import dashboard
    from taxonomy.models import TaxonomyNode

    # Parallel query workers' CPU is not counted by backend_cpu: keep the figure whole.
    with connection.cursor() as cursor:
        cursor.execute("SET max_parallel_workers_per_gather = 0")
    project = Project.objects.get(name=args.project)
    theme = TaxonomyNode.objects.filter(
        version_id=project.taxonomy_version_id, code__startswith="C.", level=2
    ).first()

    def page(**filters: Any) -> Callable[[], object]:
        return lambda: issue_list.issue_page(project, issue_list.IssueFilters(**filters), 1)

    cases = {
        "issue list, default (newest first)": page(),
        "issue list, final + type C + theme": page(
            status="final", final_type="C", theme=theme.code if theme else ""
        ),
        "issue list, by number": page(sort="number", descending=False),
        "issue list, by last label": page(sort="last_label"),
        "issue list, page 100 by status": lambda: issue_list.issue_page(
            project, issue_list.IssueFilters(sort="status"), 100
        ),
        "dashboard": lambda: dashboard(project),
    }
    for name, fn in cases.items():
        print(json.dumps({"case": name, **timed(fn, args.runs)}), flush=True)


if __name__ == "__main__":
    main()
