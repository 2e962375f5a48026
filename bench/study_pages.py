"""Benchmark the lead's pages on an imported study: the issue list and the dashboard.

Run after `bench/dataset_bench.py --times K --stages import` has imported the synthetic study
into `--db` (a study K times the published one); issue #30 item 5's target at K = 10 is
<= 300 ms for the dashboard and every issue list page. Each case is the function the page
calls (`labeling.issue_list.issue_page` for page 1: the count, 50 rows, their final labels;
`labeling.dashboard.dashboard`), one warm-up, then the median of `--runs`; wall and CPU (this
process plus its PostgreSQL backend). By number (`labeling.issue_list.ByRepository`) is timed
on more pages: page 1 each way, page 100 each way, the page where the first repository ends,
the last page, and with the final + type C + theme filter. `--list-only` leaves the dashboard
out.

The dashboard keeps its project-wide figures in a snapshot (issue 30 item 5), so it is timed
four ways: computing them (`fresh=True`: the first render, or one whose refresh is overdue),
from a fresh snapshot (a poll within 30 s), from a stale one (the reader that claims the
refresh and queues its task: with `--broker`, through the outbox to that Redis; without, tasks
run eagerly and a stale read computes), and the refresh task's own work
(`refresh_if_stale` on a stale snapshot). Before each run of the last two the snapshot is made
stale again (untimed); the outbox rows they queued are deleted at the end.

    .venv/bin/python bench/study_pages.py --db annotator_scale_x10 [--runs 5] \
        [--broker redis://127.0.0.1:6411/14]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from _django import backend_cpu, setup_stage

PROJECT = "Synthetic study"


def timed(
    fn: Callable[[], object], runs: int, before: Callable[[], object] | None = None
) -> dict[str, Any]:
    """Median wall and CPU of `runs` calls after a warm-up; `before` runs untimed before each."""
    if before:
        before()
    fn()  # warm-up: plans, the cache of the taxonomy, the connection
    walls, cpus = [], []
    for _ in range(runs):
        if before:
            before()
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
    parser.add_argument("--broker", help="a Redis URL: stale reads queue their refresh there")
    parser.add_argument("--dashboard-only", action="store_true")
    parser.add_argument("--list-only", action="store_true", help="the issue list, no dashboard")
    args = parser.parse_args()
    setup_stage(args.db, broker=args.broker)

    from django.conf import settings
    from django.db import connection
    from django.utils import timezone

    from annotator.models import Project, QueuedTask
    from labeling import dashboard as dashboards
    from labeling import issue_list
    from labeling.dashboard import dashboard
    from labeling.models import DashboardSnapshot
    from taxonomy.models import TaxonomyNode

    # Parallel query workers' CPU is not counted by backend_cpu: keep the figure whole.
    with connection.cursor() as cursor:
        cursor.execute("SET max_parallel_workers_per_gather = 0")
    project = Project.objects.get(name=args.project)
    theme = TaxonomyNode.objects.filter(
        version_id=project.taxonomy_version_id, code__startswith="C.", level=2
    ).first()

    def page(number: int = 1, **filters: Any) -> Callable[[], object]:
        return lambda: issue_list.issue_page(project, issue_list.IssueFilters(**filters), number)

    # By number, the page where the first repository (by owner, name) ends and the next begins.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM annotator_projectissue q"
            " JOIN ingest_issue i ON i.id = q.issue_id"
            " JOIN ingest_repository r ON r.id = i.repository_id"
            " WHERE q.project_id = %s GROUP BY r.owner, r.name ORDER BY r.owner, r.name LIMIT 1",
            [project.pk],
        )
        (first_repository,) = cursor.fetchone() or (0,)
    across = first_repository // issue_list.PER_PAGE + 1
    final_c_theme = {"status": "final", "final_type": "C", "theme": theme.code if theme else ""}

    cases = {
        "issue list, default (newest first)": page(),
        "issue list, final + type C + theme": page(**final_c_theme),
        "issue list, by number": page(sort="number", descending=False),
        "issue list, by number descending": page(sort="number"),
        "issue list, page 100 by number": page(100, sort="number", descending=False),
        "issue list, page 100 by number descending": page(100, sort="number"),
        f"issue list, page {across} by number (two repositories)": page(
            across, sort="number", descending=False
        ),
        "issue list, last page by number": page(10**6, sort="number", descending=False),
        "issue list, by number, final + type C + theme": page(
            sort="number", descending=False, **final_c_theme
        ),
        "issue list, page 20 by number descending, final + type C + theme": page(
            20, sort="number", **final_c_theme
        ),
        "issue list, by last label": page(sort="last_label"),
        "issue list, page 100 by status": lambda: issue_list.issue_page(
            project, issue_list.IssueFilters(sort="status"), 100
        ),
    }
    if args.dashboard_only:
        cases = {}
    queued_before = set(QueuedTask.objects.values_list("pk", flat=True))

    def stale() -> None:
        DashboardSnapshot.objects.filter(project=project).update(
            computed_at=timezone.now() - timedelta(seconds=dashboards.REFRESH_SECONDS + 5),
            refresh_requested_at=None,
        )

    def stale_read() -> None:
        board = dashboard(project)
        assert board.refreshing or settings.CELERY_TASK_ALWAYS_EAGER, "a stale read computed"

    def refresh_task() -> None:
        assert dashboards.refresh_if_stale(project.pk)

    dashboard_cases: dict[str, tuple[Callable[[], object], Callable[[], object] | None]] = {
        "dashboard, computing (first render)": (lambda: dashboard(project, fresh=True), None),
        "dashboard, from a fresh snapshot": (lambda: dashboard(project), None),
        "dashboard, from a stale snapshot (queues the refresh)": (stale_read, stale),
        "dashboard refresh task": (refresh_task, stale),
    }
    for name, fn in cases.items():
        print(json.dumps({"case": name, **timed(fn, args.runs)}), flush=True)
    if args.list_only:
        dashboard_cases = {}
    try:
        for name, (fn, before) in dashboard_cases.items():
            print(json.dumps({"case": name, **timed(fn, args.runs, before)}), flush=True)
    finally:
        QueuedTask.objects.filter(task=dashboards.REFRESH_TASK).exclude(
            pk__in=queued_before
        ).delete()


if __name__ == "__main__":
    main()
