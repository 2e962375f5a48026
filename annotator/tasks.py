"""Celery tasks of the site's plumbing: the outbox's sweep (annotator.outbox)."""

from __future__ import annotations

from celery import shared_task

from annotator import outbox


@shared_task
def sweep_outbox() -> int:
    """Periodic (celery beat): hand the broker the tasks still waiting for it."""
    return outbox.sweep()
