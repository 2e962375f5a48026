"""The queue's depth per project for Prometheus (`lib.metrics`), read when /metrics is scraped.

One aggregate over the open and disputed issues, through the index on (project, status,
position): its cost grows with the issues still waiting, not with the finished ones.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count

from annotator.models import Project
from labeling.models import ProjectIssue
from lib import metrics

WAITING = (ProjectIssue.Status.OPEN, ProjectIssue.Status.DISAGREEMENT)


def queue_depth() -> Iterator[tuple[tuple[str, str], float]]:
    """(project id, status) and the number of the project's issues in that status, for the
    statuses that wait for someone: open (needs annotations) and disagreement (the lead's),
    zero included."""
    rows = (
        ProjectIssue.objects.filter(status__in=WAITING)
        .order_by()
        .values_list("project_id", "status")
        .annotate(n=Count("id"))
    )
    counts = {(project_id, status): n for project_id, status, n in rows}
    # Every project, at zero where nothing waits: an empty queue is a value, not a gap.
    for project_id in Project.objects.order_by("pk").values_list("pk", flat=True):
        for status in WAITING:
            yield (str(project_id), str(status)), float(counts.get((project_id, status), 0))


QUEUE_DEPTH = metrics.ScrapeGauge(
    "annotator_queue_issues",
    "Issues waiting in a project's queue, by status (open: needs annotations; disagreement:"
    " waits for the lead).",
    ("project", "status"),
    queue_depth,
)
