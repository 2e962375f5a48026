"""Celery wrappers: they take ids and call the functions that tests call directly.

`start_export` is how a page, the API or a command asks for an export: it records the job and
queues the task once the transaction commits. Tasks call the services; services never import
this module.
"""

from __future__ import annotations

from celery import shared_task
from django.db import transaction

from annotator.models import Project
from dataset.exports import run_export_job
from dataset.models import ExportJob


@shared_task(acks_late=True)
def run_export(job_id: int) -> None:
    run_export_job(job_id)


def start_export(
    project: Project, user, real_names: bool = False, everything: bool = False
) -> ExportJob:
    """Create a job and queue it once the transaction commits."""
    job = ExportJob.objects.create(
        project=project, requested_by=user, real_names=real_names, everything=everything
    )
    transaction.on_commit(lambda: run_export.delay(job.pk))
    return job
