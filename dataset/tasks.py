"""Celery wrappers: they take ids and call the functions that tests call directly.

A page, the API or a command asks for a job through its service, which records it and queues
its task here by the task's Celery name once the transaction commits: `dataset.exports.
start_export`, `dataset.releases.start_release`, `dataset.uploads.start_upload`, and
`dataset.beyond_keywords.start_ranking` for the classifier's ranking of the dropped issues (the
recall page, and a classifier rater's training: `dataset.signals`). Tasks call the services;
services never import this module, so no process imports Celery before it queues a task
(annotator.outbox).
"""

from __future__ import annotations

from celery import Task, shared_task

from dataset.beyond_keywords import run_ranking_job
from dataset.exports import run_export_job
from dataset.models import RecallRanking, Release
from dataset.releases import build_release
from dataset.uploads import run_upload_job
from lib import jobclaim

# A job another live worker builds (its message delivered twice: docs/OPERATIONS.md "Faults")
# is looked at again after this long, until it is done or its worker is gone.
BUSY_RETRY_SECONDS = 60


@shared_task(bind=True, acks_late=True, max_retries=None)
def run_export(self: Task, job_id: int) -> None:
    try:
        run_export_job(job_id)
    except jobclaim.Busy as exc:
        raise self.retry(exc=exc, countdown=BUSY_RETRY_SECONDS) from exc


@shared_task(bind=True, acks_late=True, max_retries=None)
def run_release(self: Task, release_id: int) -> None:
    # A release whose request was rolled back or whose row is gone has nothing to build.
    if Release.objects.filter(pk=release_id).exists():
        try:
            build_release(release_id)
        except jobclaim.Busy as exc:
            raise self.retry(exc=exc, countdown=BUSY_RETRY_SECONDS) from exc


@shared_task(bind=True, acks_late=True, max_retries=None)
def run_upload(self: Task, job_id: int, language: str | None = None) -> None:
    """Check or import an uploaded file of issues (`dataset.uploads.run_upload_job`), its
    problems written in `language` (the uploader's)."""
    try:
        run_upload_job(job_id, language)
    except jobclaim.Busy as exc:
        raise self.retry(exc=exc, countdown=BUSY_RETRY_SECONDS) from exc


@shared_task(bind=True, acks_late=True, max_retries=None)
def run_ranking(self: Task, ranking_id: int) -> None:
    """Rank a project's dropped issues (`dataset.beyond_keywords.run_ranking_job`)."""
    if RecallRanking.objects.filter(pk=ranking_id).exists():
        try:
            run_ranking_job(ranking_id)
        except jobclaim.Busy as exc:
            raise self.retry(exc=exc, countdown=BUSY_RETRY_SECONDS) from exc
