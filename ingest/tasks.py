"""Celery tasks of the ingest: thin wrappers around `ingest.steps`, `ingest.runs` and
`ingest.hydration` that take ids.

A sync run is one or more parts, each a chain of `sync_part` tasks carrying the part's chain
token. A task stores pages of its part (each page its own committed step) for up to
INGEST_TASK_SECONDS (2 s), then queues the part's next task behind whatever else is queued: a
page per task would pay for a new database connection a page, since Celery closes Django's
connections around every task. A part that splits queues the new parts' first tasks at once,
so whichever workers are free share the run. The tasks stay on the queue the run was started
on (`start_sync(..., queue=...)`), so a large sync can be given workers of its own; a resumed
part goes to the default queue.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from celery import Task, shared_task
from django.conf import settings
from django.db import OperationalError
from django.utils import timezone

from annotator import outbox
from ingest import hydration, runs, steps
from ingest.models import SyncPart

log = logging.getLogger(__name__)


RETRIED_SQLSTATES = {"40P01", "40001"}  # deadlock detected, serialization failure


@shared_task(acks_late=True, bind=True)
def sync_part(self: Task, part_id: int, chain: str | None = None) -> None:
    """Pages of a part for a time slice, then the part's next task (at the rate-limit reset
    when the forge said to wait); the first tasks of any parts it split off at once."""
    queue = (self.request.delivery_info or {}).get("routing_key")
    if chain is not None and (self.request.delivery_info or {}).get("redelivered"):
        chain = runs.redelivered_chain(part_id, chain)  # its worker killed mid-slice
    worker = self.request.hostname or ""
    deadline = time.monotonic() + settings.INGEST_TASK_SECONDS
    while True:  # a part deleted meanwhile (its run gone) ends the loop: `more` is False
        try:
            result = steps.step_part(part_id, chain, worker=worker)
        except OperationalError as exc:
            if getattr(exc.__cause__, "sqlstate", None) not in RETRIED_SQLSTATES:
                raise
            # Two parts' pages crossed (PostgreSQL chose this one to undo): nothing was
            # stored, the cursor is where it was; the same step again in a moment.
            log.warning("sync part %s: %s; trying the page again", part_id, exc)
            again = timezone.now() + timedelta(seconds=1)
            outbox.enqueue(runs.SYNC_PART_TASK, [part_id, chain], eta=again, queue=queue)
            return
        for spawned_id, spawned_chain in result.spawned:
            runs.enqueue_part(spawned_id, spawned_chain, queue=queue)
        if not result.more:
            return
        if result.wait_until is not None or time.monotonic() >= deadline:
            # Never sleep here: a rate-limited part comes back at the reset time.
            runs.enqueue_part(part_id, result.chain, eta=result.wait_until, queue=queue)
            return
        chain = result.chain


@shared_task(acks_late=True)
def sync_page(run_id: int, chain: str | None = None) -> None:
    """A task queued before runs had parts: the run's part that took over its chain token."""
    part = SyncPart.objects.filter(run_id=run_id, chain=chain or "").first()
    if part is not None:
        runs.enqueue_part(part.pk, part.chain)


@shared_task(acks_late=True)
def hydrate_issues(issue_ids: list[int], run_ids: list[int] | None = None) -> None:
    """Fetch issues known only by URL (and their comments), recorded as runs a lead can watch;
    after a rate limit, the rest comes back at the reset time."""
    result = hydration.hydrate_issues(issue_ids, run_ids or ())
    if result.wait_until is not None:
        outbox.enqueue(hydration.HYDRATE_TASK, [result.rest, result.run_ids], eta=result.wait_until)


@shared_task
def resync_due() -> None:
    """Periodic (celery beat): resume stalled runs, start due incremental re-syncs."""
    runs.resume_stalled()
    runs.sync_due_repositories()
