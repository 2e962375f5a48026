"""Celery tasks of the ingest: thin wrappers around `ingest.sync` that take ids."""

from __future__ import annotations

import logging

from celery import shared_task
from django.db import transaction

from ingest import sync
from ingest.forges import ForgeError, RateLimited
from ingest.models import Issue, SyncRun

log = logging.getLogger(__name__)


@shared_task(acks_late=True)
def sync_page(run_id: int, chain: str | None = None) -> None:
    """One page of a run, then the next page as a new task (or the same one after a reset)."""
    if not SyncRun.objects.filter(pk=run_id).exists():
        return
    result = sync.step(run_id, chain)
    if result.more:
        # Never sleep here: a rate-limited run comes back at the reset time.
        eta = result.wait_until
        transaction.on_commit(lambda: sync_page.apply_async((run_id, chain), eta=eta))


@shared_task(acks_late=True)
def hydrate_issues(issue_ids: list[int]) -> None:
    """Fetch issues known only by URL (and their comments), one by one."""
    pending = list(
        Issue.objects.filter(pk__in=issue_ids, fetched_at__isnull=True).select_related("repository")
    )
    for i, issue in enumerate(pending):
        try:
            sync.hydrate_issue(issue)
        except RateLimited as exc:
            rest = [x.pk for x in pending[i:]]
            hydrate_issues.apply_async((rest,), eta=exc.retry_at)
            return
        except ForgeError as exc:
            log.warning("could not fetch %s: %s", issue, exc)


@shared_task
def resync_due() -> None:
    """Periodic (celery beat): resume stalled runs, start due incremental re-syncs."""
    sync.resume_stalled()
    sync.sync_due_repositories()
