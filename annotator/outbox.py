"""The outbox: Celery tasks are recorded in the database before they go to the broker.

A job (an export, a release, an upload, a rater run, a sync part, a hydration) is asked for by
`enqueue(task name, args)`, which writes a `QueuedTask` row in the caller's transaction and,
once it commits, hands the task to the broker (`publish`). With Redis stopped the hand-over
fails quickly, the request answers as usual and the row stays: the job is "waiting for a
worker", as its page says of a job not yet started. A sweep (`sweep`, run by celery beat every
OUTBOX_SWEEP_SECONDS and by each worker when it starts) hands waiting rows over once the
broker is back. The worker that starts a task deletes its row (`task_prerun`), so a row still
there long after it was handed over (OUTBOX_REPUBLISH_SECONDS) was lost with a Redis that
restarted empty, and is handed over again: the tasks are safe to run twice (each claims its
job's row), so a duplicate costs a no-op. The rows are the truth; the broker's queue is a copy.

Without a broker (no REDIS_URL, tasks eager) a task runs in this process after the commit, as
`.delay()` did, and no row is written.

The Celery app is the site's (`settings.TASK_APP`, config.celery), imported when this process
first hands a task over (`celery_app`), not at start: Celery with kombu, yaml and click is
~10 % of the imports of `manage.py check`, which queues nothing (bench/RESULTS.md, "Start-up
after issue 30"). Tasks are named by their Celery name (`dataset.models.EXPORT_TASK`), so
that a module that queues one imports no tasks module, and with it no Celery.

docs/OPERATIONS.md, "Faults".
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connections, transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.module_loading import import_string

from annotator.models import QueuedTask

if TYPE_CHECKING:
    from celery import Celery

log = logging.getLogger(__name__)

# The message header naming the row, read back by the worker that starts the task.
HEADER = "outbox_id"
# One quick retry: with the broker away the request must not wait on it.
RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.1, "interval_max": 0.1}
# A row is left to the publisher of its own request this long before a sweep takes it over.
SWEEP_GRACE = timedelta(seconds=2)


def celery_app() -> Celery:
    """The site's Celery app (settings.TASK_APP), imported on first use (see the docstring);
    with it, the site's Celery signal receivers (config.celery)."""
    return import_string(settings.TASK_APP)


def enqueue(
    task: str,
    args: Sequence[Any] = (),
    kwargs: dict[str, Any] | None = None,
    *,
    queue: str | None = None,
    eta: datetime | None = None,
) -> QueuedTask | None:
    """Record the task in the current transaction and queue it once that commits."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        transaction.on_commit(lambda: _apply_here(task, list(args), kwargs or {}))
        return None
    row = QueuedTask.objects.create(
        task=task, args=list(args), kwargs=kwargs or {}, queue=queue or "", eta=eta
    )
    transaction.on_commit(lambda: publish(row.pk))
    return row


def waiting(task: str, args: Sequence[Any]) -> bool:
    """Whether this task with these arguments waits in the outbox: recorded, and not started
    by a worker yet (handed to the broker or not)."""
    return QueuedTask.objects.filter(task=task, args=list(args)).exists()


def _apply_here(task: str, args: list, kwargs: dict) -> None:
    app = celery_app()
    app.loader.import_default_modules()  # a web process has not imported tasks.py
    app.tasks[task].apply_async(args, kwargs)


def publish(row_id: int) -> bool:
    """Hand the row's task to the broker; False (the row kept, the error noted) if it is away."""
    row = QueuedTask.objects.filter(pk=row_id).first()
    return True if row is None else _publish(row)


def _publish(row: QueuedTask) -> bool:
    options: dict[str, Any] = {}
    if row.queue:
        options["queue"] = row.queue
    if row.eta is not None:
        options["eta"] = row.eta
    try:
        celery_app().send_task(
            row.task,
            list(row.args),
            dict(row.kwargs),
            headers={HEADER: row.pk},
            retry=True,
            retry_policy=RETRY_POLICY,
            **options,
        )
    except Exception as exc:  # kombu's OperationalError, redis' ConnectionError, OSError...
        log.warning("task %s (outbox %s) waits for the broker: %s", row.task, row.pk, exc)
        QueuedTask.objects.filter(pk=row.pk).update(
            attempts=F("attempts") + 1, last_error=str(exc)[:500]
        )
        return False
    QueuedTask.objects.filter(pk=row.pk).update(
        published_at=timezone.now(), attempts=F("attempts") + 1, last_error=""
    )
    return True


def due(now: datetime | None = None) -> Q:
    """Rows a sweep hands over: never handed over (past the grace), or handed over long ago
    and not started (lost with the broker's queue; not one waiting for its own eta)."""
    now = now or timezone.now()
    again = now - timedelta(seconds=settings.OUTBOX_REPUBLISH_SECONDS)
    return Q(published_at__isnull=True, created_at__lt=now - SWEEP_GRACE) | Q(
        Q(eta__isnull=True) | Q(eta__lt=again), published_at__lt=again
    )


def sweep(limit: int = 500) -> int:
    """Hand over the rows that are due, oldest first; stops at the first refusal (the broker
    still away). Returns how many went. Rows another sweep holds are skipped."""
    sent = 0
    with transaction.atomic():
        rows = (
            QueuedTask.objects.select_for_update(skip_locked=True)
            .filter(due())
            .order_by("created_at", "pk")[:limit]
        )
        for row in rows:
            if not _publish(row):
                break
            sent += 1
    if sent:
        log.info("outbox: %s waiting task(s) handed to the broker", sent)
    return sent


def run_here(row_id: int) -> None:
    """Run a row's task in this process and drop the row, as a worker would (tests, or a
    one-off from `manage.py shell` when no worker can be had)."""
    row = QueuedTask.objects.filter(pk=row_id).first()
    if row is None:
        return
    row.delete()
    app = celery_app()
    app.loader.import_default_modules()
    app.tasks[row.task](*row.args, **row.kwargs)


def _started(task: Any = None, **kwargs: Any) -> None:
    """task_prerun: the worker took the task, so its row is done with."""
    request = getattr(task, "request", None)
    row_id = getattr(request, HEADER, None) or (getattr(request, "headers", None) or {}).get(HEADER)
    if row_id:
        QueuedTask.objects.filter(pk=row_id).delete()


def _worker_ready(**kwargs: Any) -> None:
    """A worker starting (after a deployment, or with the broker back): hand over what waits."""
    try:
        sweep()
    except Exception:  # the worker starts anyway; beat's sweep comes back to it
        log.exception("outbox sweep at worker start-up failed")
    finally:
        connections.close_all()


def connect_signals() -> None:
    """A worker's hooks: called by annotator.tasks, which every worker imports at start (task
    discovery), before it takes a task; no web process or command needs them. Celery is
    imported here, not at the top (see the docstring)."""
    from celery.signals import task_prerun, worker_ready

    task_prerun.connect(_started, dispatch_uid="annotator.outbox.started", weak=False)
    worker_ready.connect(_worker_ready, dispatch_uid="annotator.outbox.worker_ready", weak=False)
