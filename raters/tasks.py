"""Celery wrappers: they take ids and call `raters.runs`, which tests also call directly.

A page, the API or a command asks for a run through `raters.runs.start_run`, which records the
run and queues `run_rater_task` by its Celery name once the transaction commits (so no process
imports Celery before it queues a task: annotator.outbox). `retrain_due` is queued when a
final label is recorded in a project that has a trained classifier (`raters.signals`, by its
name `raters.runs.RETRAIN_TASK`); it reruns every classifier with enough new final labels,
skipping one whose run is already queued or running (`begin_run` locks the rater's row, so two
close final labels start one run).
"""

from __future__ import annotations

from celery import Task, shared_task

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
