"""Celery wrappers: they take ids and call the functions that tests call directly.

`start_export` is how a page, the API or a command asks for an export: it records the job and
queues the task once the transaction commits; `start_ranking` the same for the classifier's
ranking of the dropped issues (`dataset.beyond_keywords`), asked for by the recall page and by
a classifier rater's training (`dataset.signals`). Tasks call the services; services never import
this module.
"""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task
from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils.translation import get_language

from annotator import outbox
from annotator.models import Project
from dataset.beyond_keywords import begin_ranking, run_ranking_job
from dataset.exports import run_export_job
from dataset.models import ExportJob, RecallRanking, Release, UploadJob
from dataset.releases import build_release, create_release
from dataset.uploads import keep_file, run_upload_job
from ingest.issue_files import guess_kind
from labeling.models import MachineRater
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


def start_export(
    project: Project, user: User, real_names: bool = False, everything: bool = False
) -> ExportJob:
    """Create a job and queue it once the transaction commits (through the outbox, so a
    broker that is away leaves it waiting for a worker, not lost)."""
    with transaction.atomic():
        job = ExportJob.objects.create(
            project=project, requested_by=user, real_names=real_names, everything=everything
        )
        outbox.enqueue(run_export.name, [job.pk])
    return job


@shared_task(bind=True, acks_late=True, max_retries=None)
def run_release(self: Task, release_id: int) -> None:
    # A release whose request was rolled back or whose row is gone has nothing to build.
    if Release.objects.filter(pk=release_id).exists():
        try:
            build_release(release_id)
        except jobclaim.Busy as exc:
            raise self.retry(exc=exc, countdown=BUSY_RETRY_SECONDS) from exc


def start_release(
    project: Project, user: User, version: str, note: str = "", **citation: Any
) -> Release:
    """Validate and record a release (Refusal naming the field), and queue its build once
    the transaction commits. `citation`: title, authors, licence (`create_release`)."""
    with transaction.atomic():
        release = create_release(project, user, version, note, **citation)
        outbox.enqueue(run_release.name, [release.pk])
    return release


@shared_task(bind=True, acks_late=True, max_retries=None)
def run_upload(self: Task, job_id: int, language: str | None = None) -> None:
    """Check or import an uploaded file of issues (`dataset.uploads.run_upload_job`), its
    problems written in `language` (the uploader's)."""
    try:
        run_upload_job(job_id, language)
    except jobclaim.Busy as exc:
        raise self.retry(exc=exc, countdown=BUSY_RETRY_SECONDS) from exc


def start_upload(
    project: Project,
    user: User,
    upload: UploadedFile,
    *,
    kind: str = "",
    source: str,
    dry_run: bool,
    add_to_queue: bool = True,
    fetch: bool = False,
) -> UploadJob:
    """Keep the file under UPLOAD_ROOT, record the job and queue its task on commit."""
    name = (upload.name or "upload")[:200]
    upload.seek(0)
    data = upload.read()
    if not kind:
        kind = guess_kind(name, data[:64].decode("utf-8", "replace"))
    # The problems are read on the page in the uploader's language: the task writes them in it.
    language = get_language()
    with transaction.atomic():
        job = keep_file(project, user, name, data, kind, source, dry_run, add_to_queue, fetch)
        outbox.enqueue(run_upload.name, [job.pk, language])
    return job


@shared_task(bind=True, acks_late=True, max_retries=None)
def run_ranking(self: Task, ranking_id: int) -> None:
    """Rank a project's dropped issues (`dataset.beyond_keywords.run_ranking_job`)."""
    if RecallRanking.objects.filter(pk=ranking_id).exists():
        try:
            run_ranking_job(ranking_id)
        except jobclaim.Busy as exc:
            raise self.retry(exc=exc, countdown=BUSY_RETRY_SECONDS) from exc


def start_ranking(
    project: Project, rater: MachineRater | None, version: int, user: User | None = None
) -> RecallRanking:
    """Record a ranking of the project for (rater, version) and queue it once the transaction
    commits; one of that key already queued or running is returned instead, not started twice."""
    with transaction.atomic():
        ranking, created = begin_ranking(project, rater, version, user)
        if created:
            outbox.enqueue(run_ranking.name, [ranking.pk])
    return ranking
