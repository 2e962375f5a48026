"""The queue's depth per project for Prometheus (`lib.metrics`), read when /metrics is scraped.

One statement: per project, a count of its open and of its disputed issues, each an
index-only scan of that range of the index on (project, status, position), so its cost grows
with the issues still waiting, not with the finished ones (at 387,000 issues, 88 % final:
20 ms, where one GROUP BY over the table read all of it in 66 ms; docs/OPERATIONS.md).
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce

from annotator.models import Project
from labeling.models import ProjectIssue
from lib import metrics

WAITING = (ProjectIssue.Status.OPEN, ProjectIssue.Status.DISAGREEMENT)


def _waiting(status: str) -> Coalesce:
    """The project's issues in `status`: an index-only scan of that range of the index on
    (project, status, position), per project."""
    count = (
        ProjectIssue.objects.filter(project=OuterRef("pk"), status=status)
        .order_by()
        .values("project")
        .annotate(n=Count("*"))
        .values("n")
    )
    return Coalesce(Subquery(count), 0)


def queue_depth() -> Iterator[tuple[tuple[str, str], float]]:
    """(project id, status) and the number of the project's issues in that status, for the
    statuses that wait for someone: open (needs annotations) and disagreement (the lead's),
    zero included (an empty queue is a value, not a gap)."""
    rows = (
        Project.objects.order_by("pk")
        .annotate(**{status: _waiting(status) for status in WAITING})
        .values_list("pk", *WAITING)
    )
    for project_id, *counts in rows:
        for status, n in zip(WAITING, counts, strict=True):
            yield (str(project_id), str(status)), float(n)


QUEUE_DEPTH = metrics.ScrapeGauge(
    "annotator_queue_issues",
    "Issues waiting in a project's queue, by status (open: needs annotations; disagreement:"
    " waits for the lead).",
    ("project", "status"),
    queue_depth,
)
