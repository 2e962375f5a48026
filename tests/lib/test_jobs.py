"""A job's task delivered twice (`lib.jobs.Job.claim`): of two deliveries at once, each on its
own database connection, exactly one owns the job; a job whose worker is gone is taken over,
and one a live process runs is left to it."""

from __future__ import annotations

import os
import socket
import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.db import InterfaceError, connection
from django.utils import timezone

from dataset.models import ExportJob, RecallRanking, Release, UploadJob
from lib import jobclaim
from lib.jobs import Job
from raters.models import RaterRun
from tests.job_helpers import KINDS, make_job

DEAD_PID = 2**22 + 1  # above Linux's highest pid: no such process
HERE = socket.gethostname()
STATES = {
    "queued": {},
    "running-under-a-dead-pid": {
        "status": "running",
        "worker": f"{HERE}:{DEAD_PID}",
        "heartbeat_at": timezone.now(),
    },
}


def _two_deliveries(kind: type[Job], job_id: int) -> tuple[list[object], set[int]]:
    """Two threads, each on its own database connection, read the job and claim it at once:
    what each claim answered (True, False or "busy") and the connections' backend pids."""
    start = threading.Barrier(2)
    outcomes: list[object] = []
    backends: set[int] = set()
    lock = threading.Lock()

    def deliver() -> None:
        try:
            # Each delivery reads the row on its own connection before either claims.
            mine = kind._default_manager.get(pk=job_id)
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                backend = cursor.fetchone()[0]
            start.wait(timeout=10)
            try:
                outcome: object = mine.claim()
            except jobclaim.Busy:
                outcome = "busy"
            with lock:
                outcomes.append(outcome)
                backends.add(backend)
        finally:
            connection.close()

    threads = [threading.Thread(target=deliver) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return outcomes, backends


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_of_two_deliveries_at_once_exactly_one_owns_the_job(kind, state, project):
    for _round in range(3):
        job = make_job(kind, project, **STATES[state])
        try:
            outcomes, backends = _two_deliveries(kind, job.pk)
            assert len(backends) == 2  # two connections, not one
            # One owner; the other finds the job run by a live process (this one).
            assert sorted(outcomes, key=str) == [True, "busy"]
            row = kind.objects.get(pk=job.pk)
            assert (row.status, row.worker) == ("running", jobclaim.this_worker())
        finally:
            # What the winner does when it is done with the job.
            job.unclaim()
        assert not jobclaim.running_here(job.claim_key)


@pytest.mark.django_db
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_a_job_whose_worker_is_gone_is_taken_over_and_a_live_workers_is_not(kind, project):
    now = timezone.now()
    alive = f"{HERE}:{os.getppid()}"  # another process of this host, running
    job = make_job(kind, project, status="running", worker=alive, heartbeat_at=now)
    with pytest.raises(jobclaim.Busy):
        job.claim()
    assert kind.objects.get(pk=job.pk).worker == alive

    # Its worker killed: no such pid any more.
    kind.objects.filter(pk=job.pk).update(worker=f"{HERE}:{DEAD_PID}")
    job.refresh_from_db()
    assert job.claim() is True
    job.unclaim()
    row = kind.objects.get(pk=job.pk)
    assert (row.status, row.worker) == ("running", jobclaim.this_worker())
    assert row.heartbeat_at > now

    # This very process, not running it any more (its task ended without finishing it).
    assert job.claim() is True
    job.unclaim()

    # A worker of another host: its own while heard of lately, gone after `JOB_STALE_SECONDS`.
    elsewhere = "worker-7.internal:4242"
    kind.objects.filter(pk=job.pk).update(worker=elsewhere, heartbeat_at=now)
    job.refresh_from_db()
    with pytest.raises(jobclaim.Busy):
        job.claim()
    silent = now - jobclaim.stale_after() - timedelta(seconds=1)
    kind.objects.filter(pk=job.pk).update(heartbeat_at=silent)
    job.refresh_from_db()
    assert job.claim() is True
    job.unclaim()


@pytest.mark.django_db
def test_a_claim_on_a_row_read_before_another_claimed_it_does_not_own_it(project):
    """The conditional UPDATE, not the row read earlier, decides: a delivery whose copy of the
    row is out of date reads it again and finds the job another's."""
    job = make_job(ExportJob, project)
    late = ExportJob.objects.get(pk=job.pk)  # read while still queued
    ExportJob.objects.filter(pk=job.pk).update(
        status="running", worker=f"{HERE}:{os.getppid()}", heartbeat_at=timezone.now()
    )
    with pytest.raises(jobclaim.Busy):
        late.claim()
    assert late.status == "running"  # read again
    assert ExportJob.objects.get(pk=job.pk).worker == f"{HERE}:{os.getppid()}"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("kind", "runs_again"),
    [
        (ExportJob, True),
        (UploadJob, False),
        (Release, False),
        (RaterRun, True),
        (RecallRanking, False),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else str(v),
)
def test_a_done_job_is_never_claimed_and_a_failed_one_as_its_kind_says(kind, runs_again, project):
    done = make_job(kind, project, status="done")
    assert done.claim() is False
    failed = make_job(kind, project, status="failed")
    assert failed.claim() is runs_again
    assert kind.objects.get(pk=failed.pk).status == ("running" if runs_again else "failed")
    failed.unclaim()


def _heartbeat_threads(job: Job) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"heartbeat {job.claim_key}"]


def _beating_backends(kind: type[Job]) -> set[int]:
    """The other connections to this database whose last statement wrote a heartbeat of
    `kind`'s table. (Not a count of every connection: earlier tests of the same process may
    leave theirs, such as the live server's threads a browser keeps alive.)"""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND query LIKE %s",
            # The beat's UPDATE writes that column alone (a claim's writes the status first).
            [f'UPDATE "{kind._meta.db_table}" SET "heartbeat_at" = %'],
        )
        return {pid for (pid,) in cursor.fetchall()}


def _backend_gone(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = %s)", [pid])
        return cursor.fetchone()[0]


def _wait(predicate, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_the_heartbeat_beats_while_the_work_is_silent_and_never_revives_a_job_taken_over(
    kind, project, settings
):
    """Lena's job runs here; its work says nothing, yet its heartbeat goes on, on a connection
    of its own. Another worker takes the job over meanwhile (its host thought this one gone):
    from then on the heartbeat leaves the row alone and stops."""
    settings.JOB_HEARTBEAT_SECONDS = 0.05
    job = make_job(kind, project)
    elsewhere = "worker-7.internal:4242"
    taken_at = timezone.now() - timedelta(hours=1)
    seen: dict[str, Any] = {}

    def silent_work(claimed: Job) -> Job:
        claimed_at = claimed.heartbeat_at
        # The probe: the heartbeat moves on its own while the work says nothing.
        _wait(lambda: kind.objects.get(pk=job.pk).heartbeat_at > claimed_at, 5, "a heartbeat")
        seen["beating"] = _heartbeat_threads(job) != []
        seen["beaters"] = _beating_backends(kind)
        # Another worker claims the job (as `Job.claim` writes it).
        kind.objects.filter(pk=job.pk).update(worker=elsewhere, heartbeat_at=taken_at)
        _wait(lambda: _heartbeat_threads(job) == [], 5, "the heartbeat to stop")
        return claimed

    job.run_claimed(silent_work)
    # It beat on one connection, not this thread's (its pid is not ours).
    assert seen["beating"] and len(seen["beaters"]) == 1
    row = kind.objects.get(pk=job.pk)
    assert (row.status, row.worker, row.heartbeat_at) == ("running", elsewhere, taken_at)
    # Its connection closed with it.
    (beater,) = seen["beaters"]
    _wait(lambda: _backend_gone(beater), 5, "the heartbeat's connection to close")


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_stops_when_the_work_fails(project, settings):
    settings.JOB_HEARTBEAT_SECONDS = 0.05
    job = make_job(ExportJob, project)
    beaters: set[int] = set()

    def failing_work(claimed: Job) -> Job:
        claimed_at = claimed.heartbeat_at
        _wait(lambda: ExportJob.objects.get(pk=job.pk).heartbeat_at > claimed_at, 5, "a heartbeat")
        beaters.update(_beating_backends(ExportJob))
        raise RuntimeError("the disk is on fire")

    with pytest.raises(RuntimeError, match="on fire"):
        job.run_claimed(failing_work)
    assert _heartbeat_threads(job) == []
    assert not jobclaim.running_here(job.claim_key)
    last = ExportJob.objects.get(pk=job.pk).heartbeat_at
    time.sleep(0.2)  # four heartbeats' time: none comes
    assert ExportJob.objects.get(pk=job.pk).heartbeat_at == last
    assert len(beaters) == 1
    (beater,) = beaters
    _wait(lambda: _backend_gone(beater), 5, "the heartbeat's connection to close")


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_goes_on_after_a_beat_fails_in_any_way(project, settings, monkeypatch):
    """A beat that raises something other than a database error (a connection broken under
    it: Django's InterfaceError is no DatabaseError) is logged and the next one is tried: a
    heartbeat that died would let another host take the running job over."""
    settings.JOB_HEARTBEAT_SECONDS = 0.05
    job = make_job(ExportJob, project)
    beat, failures = ExportJob.beat, []

    def beat_failing_twice(self: Job, worker: str) -> bool:
        if len(failures) < 2:
            failures.append(worker)
            raise InterfaceError("connection already closed")
        return beat(self, worker)

    monkeypatch.setattr(ExportJob, "beat", beat_failing_twice)

    def silent_work(claimed: Job) -> Job:
        claimed_at = claimed.heartbeat_at
        _wait(lambda: ExportJob.objects.get(pk=job.pk).heartbeat_at > claimed_at, 5, "a beat")
        return claimed

    job.run_claimed(silent_work)
    assert len(failures) == 2  # the probe: the failing beats did run, before the one that wrote


@pytest.mark.django_db
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_a_job_ends_only_while_it_is_this_workers(kind, project, caplog):
    """`Job.end`: the owner's end is written (done: progress 100, a finish time where the kind
    has one) and what it publishes goes out; once another worker took the job over, nothing is
    written or published, the warning names both workers and the instance reads the row."""
    published: list[str] = []
    job = make_job(kind, project)
    assert job.claim() is True
    job.unclaim()
    assert job.end("done", publish=lambda: published.append("mine")) is True
    row = kind.objects.get(pk=job.pk)
    assert (row.status, published) == ("done", ["mine"])
    if "progress" in {f.name for f in kind._meta.concrete_fields}:
        assert row.progress == 100
    assert row.finished_at is not None

    taken = make_job(kind, project)
    assert taken.claim() is True
    taken.unclaim()
    elsewhere, now = "worker-7.internal:4242", timezone.now()
    kind.objects.filter(pk=taken.pk).update(worker=elsewhere, heartbeat_at=now)
    with caplog.at_level("WARNING", logger="lib.jobs"):
        assert taken.end("failed", publish=lambda: published.append("late")) is False
    row = kind.objects.get(pk=taken.pk)
    assert (row.status, row.worker, row.heartbeat_at, row.finished_at) == (
        "running",
        elsewhere,
        now,
        None,
    )
    assert published == ["mine"]
    assert (taken.status, taken.worker) == ("running", elsewhere)  # read again
    assert f"taken over by {elsewhere}" in caplog.text and jobclaim.this_worker() in caplog.text
