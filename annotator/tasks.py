"""Celery tasks of the site's plumbing: the outbox's sweep (annotator.outbox) and the sweep of
jobs whose worker is gone (annotator.jobsweep)."""

from __future__ import annotations

from celery import shared_task

from annotator import jobsweep, outbox

# A worker imports every app's tasks module at start, before it takes a task: the outbox's
# hooks (a started task's row deleted, waiting rows handed over when the worker is ready) are
# connected here, where only workers (and processes that run a task in place) pay for Celery.
outbox.connect_signals()


@shared_task
def sweep_outbox() -> int:
    """Periodic (celery beat): hand the broker the tasks still waiting for it."""
    return outbox.sweep()


@shared_task
def requeue_stale_jobs() -> list[str]:
    """Periodic (celery beat): jobs left running by a worker that is gone, their task queued
    again (annotator.jobsweep); the jobs' names ("kind:id")."""
    return [job.claim_key for job in jobsweep.requeue_stale()]
