"""Celery wrappers: they take ids and call `raters.runs`, which tests also call directly.

`start_run` is how a page, the API or a command asks for a run: it records the run and queues
the task once the transaction commits. `retrain_due` is queued when a final label is recorded
in a project that has a trained classifier (`raters.signals`); it reruns every classifier with
enough new final labels, skipping one whose run is already queued or running (`begin_run`
locks the rater's row, so two close final labels start one run).
"""

from __future__ import annotations

from celery import Task, shared_task
from django.contrib.auth.models import User
from django.db import transaction

from annotator import outbox
from labeling.models import MachineRater
from raters.models import RaterRun
from raters.runs import RaterBusy, begin_run, raters_due, run_rater

# A run another live process runs (this message delivered twice: the broker's visibility
# timeout passed during a long run) is looked at again after this long, so the run is taken
# over if that process dies (docs/OPERATIONS.md "Faults").
BUSY_RETRY_SECONDS = 60


@shared_task(bind=True, acks_late=True, max_retries=None)
def run_rater_task(self: Task, run_id: int) -> None:
    if RaterRun.objects.filter(pk=run_id).exists():
        run = run_rater(run_id)
        if run.status == RaterRun.Status.RUNNING and not run.stale:
            raise self.retry(countdown=BUSY_RETRY_SECONDS)


def start_run(
    rater: MachineRater, only: str = RaterRun.Scope.ALL, user: User | None = None
) -> RaterRun:
    """Record a run (Refusal naming the field; RaterBusy while one of the rater's runs is
    queued or running) and queue it once the transaction commits."""
    with transaction.atomic():
        run = begin_run(rater, only, user)
        outbox.enqueue(run_rater_task.name, [run.pk])
    return run


def resume_run(run: RaterRun) -> RaterRun:
    """Queue a run that stopped again (it goes on from the issues not labeled yet)."""
    outbox.enqueue(run_rater_task.name, [run.pk])
    return run


@shared_task(acks_late=True)
def retrain_due(project_id: int) -> list[int]:
    """Retrain and rerun the project's classifiers that are due; returns the runs' ids."""
    runs = []
    for rater in raters_due(project_id):
        try:
            run = begin_run(rater, RaterRun.Scope.ALL)
        except RaterBusy:  # a run of this rater is queued or running: it is not started twice
            continue
        run_rater(run.pk)
        runs.append(run.pk)
    return runs
