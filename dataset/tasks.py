"""Celery wrappers: they take ids and call the functions that tests call directly."""

from __future__ import annotations

from celery import shared_task


@shared_task(acks_late=True)
def run_export(job_id: int) -> None:
    from dataset.exports import run_export_job

    run_export_job(job_id)
