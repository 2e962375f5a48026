"""The sweep of jobs left `running` by a worker that is gone: their task queued again.

A job's task is acknowledged when it ends (`task_acks_late`), so the message of a worker lost
with its host, or killed with SIGKILL, comes back to another worker only with the Redis
transport's visibility timeout (`CELERY_VISIBILITY_TIMEOUT`, 15 min) and its restore interval,
although every process can tell that worker is gone once it has not been heard of for
`JOB_STALE_SECONDS` (2 min): the rule every claim uses, `lib.jobs.Job.stale`. So celery beat
runs `requeue_stale` every `JOB_SWEEP_SECONDS` (60 s): each job of every kind (every model of
the site that subclasses `lib.jobs.Job`) `running` under a worker that is gone has its task
queued again through the outbox, as its kind declares it (`Job.TASK`, `Job.task_args`), unless
a row of that very task waits in the outbox already (an earlier sweep's, not started yet: no
worker free, or the broker away), so a job nobody can run yet is queued once, not every
minute. The worker that takes the task claims the job (`Job.claim`) and runs it; the lost
worker's message, when it comes back later, finds the job done (or running under a live
worker, and looks again later) and does nothing.

Jobs still queued (`pending`) are the outbox's own business (`annotator.outbox.sweep`).
docs/OPERATIONS.md, "Faults".
"""

from __future__ import annotations

import logging

from django.apps import apps
from django.db import transaction

from annotator import outbox
from lib import metrics
from lib.jobs import Job, JobStatus

log = logging.getLogger(__name__)


def job_kinds() -> list[type[Job]]:
    """Every concrete job model of the site: those that subclass `lib.jobs.Job`."""
    return [
        model for model in apps.get_models() if issubclass(model, Job) and not model._meta.proxy
    ]


def requeue_stale() -> list[Job]:
    """Queue again the task of each job `running` under a worker that is gone, unless that task
    already waits in the outbox; returns the jobs queued."""
    queued: list[Job] = []
    for kind in job_kinds():
        running = kind._base_manager.filter(status=JobStatus.RUNNING.value)
        for job_id in [job.pk for job in running if job.stale]:
            job = _requeue(kind, job_id)
            if job is not None:
                queued.append(job)
    return queued


def _requeue(kind: type[Job], job_id: int) -> Job | None:
    """Queue the job's task if, read again under its row's lock, it is still stale and its task
    does not wait in the outbox: a delivery that claimed it meanwhile, or a sweep at the same
    time (two beats during an upgrade), finds nothing to do."""
    with transaction.atomic():
        job = kind._base_manager.select_for_update(skip_locked=True).filter(pk=job_id).first()
        if job is None or not job.stale:
            return None
        args = job.task_args()
        if outbox.waiting(kind.TASK, args):
            return None
        row = outbox.enqueue(kind.TASK, args)
    heard = job.last_heard()
    log.warning(
        "job %s was running under %s, not heard of since %s: its worker is gone, its task "
        "%s%s queued again (outbox %s)",
        job.claim_key,
        job.worker or "?",
        heard.isoformat() if heard else "?",
        kind.TASK,
        tuple(args),
        row.pk if row is not None else "-",
    )
    metrics.job_requeued(kind.JOB_KIND)
    return job
