"""Celery tasks of the site's plumbing: the outbox's sweep (annotator.outbox)."""

from __future__ import annotations

from celery import shared_task

from annotator import outbox

# A worker imports every app's tasks module at start, before it takes a task: the outbox's
# hooks (a started task's row deleted, waiting rows handed over when the worker is ready) are
# connected here, where only workers (and processes that run a task in place) pay for Celery.
outbox.connect_signals()


@shared_task
def sweep_outbox() -> int:
    """Periodic (celery beat): hand the broker the tasks still waiting for it."""
    return outbox.sweep()
