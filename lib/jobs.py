"""One job lifecycle: the abstract `Job` of exports, releases, uploads, rater runs and recall
rankings.

A job is asked for by someone (`requested_by`), queued (`pending`), run by one worker
(`running`: `worker` "host:pid", `heartbeat_at`, `started_at`, `step`, `progress`) and ends
`done` or `failed` (`finished_at`, `error`). While the work runs (`Job.run_claimed`), a
`Heartbeat` thread writes `heartbeat_at` every `JOB_HEARTBEAT_SECONDS`, whether or not the work
reports progress (a classifier's fit, a release read in one transaction say nothing for
minutes), so a worker of another host silent for `JOB_STALE_SECONDS` is gone
(`lib.jobclaim.gone`), not busy. Its Celery task is acknowledged when it ends, so
a task may be delivered twice (a killed worker's, after the broker's visibility timeout:
docs/OPERATIONS.md "Faults"). Every delivery calls `Job.claim`, which answers "delivered
twice?" one way for every kind of job:

- the job ended (done; or failed, for a kind that does not run a failed job again): nothing
  to run (False);
- another live process runs it: `lib.jobclaim.Busy` (the task looks again later);
- otherwise (queued, failed and run again, or `running` under a worker that is gone:
  `lib.jobclaim.gone`) this delivery takes it by one conditional UPDATE, which names the
  status, worker and heartbeat it read: of two deliveries at once exactly one changes the row
  and owns the job (True); the other reads the row again and decides again.

A job ends one way too, `Job.end`: one conditional UPDATE that writes its end only while the
row still names this worker, so a worker taken over while it still ran (cut off from the
database, paused for longer than the stale time) leaves the row, and the file or rows it would
have published with it (`publish`), to the worker that took the job over.

Sync runs (`ingest`) are not jobs of this kind: their pages carry chain tokens
(`ingest.runs`). A concrete job keeps its table's columns: a field it does not have is set to
None on its class (Django's way of leaving out an abstract field), and a field named
otherwise in its table says so with `db_column`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, ClassVar, TypeVar

from django.conf import settings
from django.db import DatabaseError, connection, models, transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from lib import jobclaim

# A claim that lost the race reads the row again and decides again; after this many losses in
# a row the job is taken to be busy (the task looks again later).
CLAIM_ATTEMPTS = 3
# How long the end of a job waits for its heartbeat thread to stop (it is a daemon: one stuck
# on a lock goes on alone and stops at its next beat).
HEARTBEAT_JOIN_SECONDS = 5.0

logger = logging.getLogger(__name__)

J = TypeVar("J", bound="Job")


class JobStatus(models.TextChoices):
    PENDING = "pending", _("queued")
    RUNNING = "running", _("running")
    DONE = "done", _("done")
    FAILED = "failed", _("failed")


class Job(models.Model):
    """What every job has, and its one `claim`. A concrete job names its kind (`JOB_KIND`, the
    key of `lib.jobclaim`), its task (`TASK`, `task_args`), whether a failed job runs again
    when its task comes again, and how long a live worker of this host may stay silent."""

    JOB_KIND: ClassVar[str]
    # Whether a delivery runs a failed job again (an export asked again, a rater run resumed),
    # or a failure is its end (an upload's file is gone; a release's version or a recall
    # ranking is asked again).
    FAILED_RUNS_AGAIN: ClassVar[bool] = False
    # (A worker of another host not heard of for `JOB_STALE_SECONDS` is gone, whatever the kind:
    # `lib.jobclaim.stale_after`.)
    # A live process of this host not heard of for this long is taken to be gone too (None:
    # while it lives, it runs the job).
    ALIVE_STALE_AFTER: ClassVar[timedelta | None] = None
    # The Celery task that runs it, by its Celery name, and its arguments (`task_args`): how it
    # is queued, the first time and again when its worker is gone (`annotator.jobsweep`; lib
    # does not queue: `annotator.outbox.enqueue` does).
    TASK: ClassVar[str]

    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.PENDING)
    # Who asked for it (None: an operator's command).
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    step = models.CharField(max_length=200, blank=True)
    progress = models.PositiveSmallIntegerField(default=0, help_text=_("percent"))
    error = models.TextField(blank=True)
    # The process running it ("host:pid") and when it was last heard of: a redelivered task
    # takes over a job whose worker is gone (`claim`, docs/OPERATIONS.md "Faults").
    worker = models.CharField(max_length=200, blank=True, db_default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    def task_args(self) -> list[Any]:
        """The arguments its task (`TASK`) is queued with: the job's id (a kind that needs more
        says so here)."""
        return [self.pk]

    @property
    def claim_key(self) -> str:
        """The job's name among those this process runs (`lib.jobclaim.ACTIVE`)."""
        return f"{self.JOB_KIND}:{self.pk}"

    def _has(self, name: str) -> bool:
        return any(f.name == name for f in self._meta.concrete_fields)

    def last_heard(self) -> datetime | None:
        """When its worker was last heard of: its heartbeat, else its start, else its
        creation."""
        started = self.started_at if self._has("started_at") else None
        return self.heartbeat_at or started or self.created_at

    def worker_gone(self) -> bool:
        """Whether the worker the row names no longer runs it (`lib.jobclaim.gone`)."""
        return jobclaim.gone(self.claim_key, self.worker, self.last_heard(), self.ALIVE_STALE_AFTER)

    @property
    def stale(self) -> bool:
        """Left `running` by a process that stopped: the next delivery takes it over."""
        return self.status == JobStatus.RUNNING and self.worker_gone()

    def runs_again(self) -> bool:
        """Whether a delivery runs this failed job again: its kind's `FAILED_RUNS_AGAIN` (a
        kind may narrow it)."""
        return self.FAILED_RUNS_AGAIN

    def claim_values(self, now: datetime) -> dict[str, Any]:
        """What a claim writes beside the status, worker and heartbeat: a new start, and no
        error (for a job that has them)."""
        values: dict[str, Any] = {}
        if self._has("started_at"):
            values["started_at"] = now
        if self._has("error"):
            values["error"] = ""
        return values

    def claim(self) -> bool:
        """Take the job for this process: True when this delivery owns it now (mark it
        `unclaim`ed when done with it), False when it ended. Raises `lib.jobclaim.Busy` while
        another live process runs it. See the module's docstring."""
        key = self.claim_key
        if not isinstance(self.worker, str):  # made here, its database default not read yet
            self.refresh_from_db(fields=self._lifecycle_fields())
        for _attempt in range(CLAIM_ATTEMPTS):
            if self.status == JobStatus.DONE:
                return False
            if self.status == JobStatus.FAILED and not self.runs_again():
                return False
            if self.status == JobStatus.RUNNING and not self.worker_gone():
                raise jobclaim.Busy(key)
            now = timezone.now()
            values = {
                "status": JobStatus.RUNNING.value,
                "worker": jobclaim.this_worker(),
                "heartbeat_at": now,
                **self.claim_values(now),
            }
            # Marked before the row names this process: another thread of it that reads the
            # row then finds the job running here, not gone.
            jobclaim.start(key)
            try:
                owned = (
                    type(self)
                    ._base_manager.filter(
                        pk=self.pk,
                        status=self.status,
                        worker=self.worker,
                        heartbeat_at=self.heartbeat_at,  # None: IS NULL
                    )
                    .update(**values)
                )
            except BaseException:
                # The UPDATE failed (a lost connection): this process does not run the job.
                jobclaim.stop(key)
                raise
            if owned:
                for name, value in values.items():
                    setattr(self, name, value)
                return True
            jobclaim.stop(key)
            # Another delivery changed the row since it was read: read it again.
            self.refresh_from_db(fields=self._lifecycle_fields())
        raise jobclaim.Busy(key)

    def run_claimed(self: J, work: Callable[[J], J]) -> J:
        """Run `work` on the job if this delivery claims it (`claim`), its `Heartbeat` beating
        meanwhile, and let it go after; otherwise the job as it stands now (ended). Raises
        `jobclaim.Busy` as `claim` does."""
        if not self.claim():
            self.refresh_from_db()
            return self
        # SQLite (the first look) is one process on one host, and a second connection writing
        # the heartbeat would make the work's own writes fail ("database is locked").
        beating = Heartbeat(self) if connection.vendor == "postgresql" else contextlib.nullcontext()
        try:
            with beating:
                return work(self)
        finally:
            self.unclaim()

    def beat(self, worker: str) -> bool:
        """The heartbeat: `heartbeat_at` = now while the job is `running` under `worker` (a
        job another process took over meanwhile is left to it). Whether it was written. The one
        place it is written but the claim."""
        return bool(self.while_mine(worker).update(heartbeat_at=timezone.now()))

    def while_mine(self, worker: str | None = None) -> models.QuerySet[Any]:
        """The job's row while it is `running` under this delivery's worker (`self.worker`, or
        `worker`): what its heartbeat, its end and its progress reports write to, so a worker
        taken over leaves the row to the worker that took it over."""
        return type(self)._base_manager.filter(
            pk=self.pk,
            status=JobStatus.RUNNING.value,
            worker=self.worker if worker is None else worker,
        )

    def end(
        self, status: str, *, publish: Callable[[], object] | None = None, **fields: Any
    ) -> bool:
        """End the job `status` (done or failed) if it is still this worker's: one UPDATE whose
        WHERE names the job `running` under `self.worker`, writing `status`, `finished_at` (now,
        unless given; for a kind that has it), `progress` 100 when done (for a kind that has it)
        and `fields` (the error, the kind's own results). `publish` (what goes out with the end:
        a file linked to its final name, the rows of a result) runs after that UPDATE, in its
        transaction, while the row is locked: only the owner publishes, and one that raises
        undoes the end (the exception goes on to the caller, whose failure path ends it failed).

        True when this worker still owned the job (the instance then holds what was written).
        False when another worker took it over (or it ended meanwhile): nothing written, nothing
        published, a warning logged, and the instance read again from the row."""
        values: dict[str, Any] = {"status": status}
        if self._has("finished_at"):
            values["finished_at"] = timezone.now()
        if status == JobStatus.DONE and self._has("progress"):
            values["progress"] = 100
        values.update(fields)
        with transaction.atomic():
            owned = self.while_mine().update(**values)
            if owned and publish is not None:
                publish()
        if owned:
            for name, value in values.items():
                setattr(self, name, value)
            return True
        mine = self.worker
        self.refresh_from_db()
        logger.warning(
            "job %s was taken over by %s (now %s) while %s ran it: its end (%s) is left to it",
            self.claim_key,
            self.worker or "?",
            self.status,
            mine,
            status,
        )
        return False

    def unclaim(self) -> None:
        """This process no longer runs the job (its row still names it: a later delivery finds
        this process not running it, so the worker counts as gone)."""
        jobclaim.stop(self.claim_key)

    def report(self, step: str, done: int, total: int) -> None:
        """Where the running job is: its step and its progress (0 to 99 until it ends); then
        `lib.jobclaim.step_pause` (tests only). The heartbeat is `Heartbeat`'s. Written only
        while the job is this worker's (`while_mine`)."""
        self.while_mine().update(step=step, progress=min(99, 100 * done // max(total, 1)))
        jobclaim.step_pause()

    def _lifecycle_fields(self) -> list[str]:
        names = ["status", "worker", "heartbeat_at", "created_at", "started_at", "error"]
        return [name for name in names if self._has(name)]


class Heartbeat:
    """While a claimed job's work runs: a daemon thread that writes its heartbeat (`Job.beat`)
    every `JOB_HEARTBEAT_SECONDS`, on a database connection of its own (Django's connections
    are per thread; it closes its own when it stops), so the heartbeat goes on while the work
    computes in silence or holds its connection in a long transaction. It stops when the work
    ends, however it ends, and once the job no longer names this worker (ended, or taken over:
    it never revives a job another process owns). A beat that fails (the database away) is
    tried again at the next one."""

    def __init__(self, job: Job) -> None:
        self.job, self.worker = job, job.worker
        self.every = jobclaim.heartbeat_seconds()
        self.stopped = threading.Event()
        self.thread = threading.Thread(
            target=self._beat_until_stopped, name=f"heartbeat {job.claim_key}", daemon=True
        )

    def __enter__(self) -> Heartbeat:
        self.thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stopped.set()
        self.thread.join(HEARTBEAT_JOIN_SECONDS)

    def _beat_until_stopped(self) -> None:
        try:
            while not self.stopped.wait(self.every):
                try:
                    if not self.job.beat(self.worker):
                        self._say_why_it_stops()
                        return
                except Exception:  # the database away, a connection broken (InterfaceError), …
                    # The work goes on: keep beating, or another host takes it over.
                    logger.warning("heartbeat of job %s failed", self.job.claim_key, exc_info=True)
                    _close_connection()  # this thread's: the next beat connects again
        finally:
            _close_connection()

    def _say_why_it_stops(self) -> None:
        """Logs a job taken over while this worker still runs it (one that ended says nothing)."""
        status, worker = (
            type(self.job)
            ._base_manager.filter(pk=self.job.pk)
            .values_list("status", "worker")
            .first()
        ) or ("", "")
        if status == JobStatus.RUNNING and worker != self.worker:
            logger.warning(
                "job %s was taken over by %s while %s still runs it",
                self.job.claim_key,
                worker,
                self.worker,
            )


def _close_connection() -> None:
    """Closes this thread's database connection (one that broke may raise as it closes)."""
    with contextlib.suppress(DatabaseError):
        connection.close()
