"""A worker host lost in the middle of an export: a live worker of another host finishes it
within `JOB_STALE_SECONDS` + `JOB_SWEEP_SECONDS` of the lost host's last heartbeat, exactly once,
without waiting for the broker's visibility timeout (`annotator.jobsweep`).

Lena asks for an export. Host A's worker (a real `celery worker` whose `socket.gethostname()`
answers "host-a": `tests.faults.as_host`) claims it and is killed with SIGKILL mid-build, its
message left unacknowledged in Redis as a host's power cut leaves it. The visibility timeout is
an hour here (`CELERY_VISIBILITY_TIMEOUT=3600`), so that message cannot come back during the
test: only the sweep, run by the live worker's beat every second (`JOB_SWEEP_SECONDS=1`), can
bring the export back, once host A has been silent for 3 s (`JOB_STALE_SECONDS`; heartbeat
1 s). While host A still beats, the sweep leaves its export alone. Checked: the export is taken
over no sooner than 3 s after host A's last heartbeat and built within a few seconds of that;
one ZIP, complete, alone in its folder (host A's `.part` deleted); the sweep queued it once and
the outbox is empty. Then a worker with a one-second visibility timeout brings host A's own
message back, as the hour would: it finds the export done and changes nothing.

The task is sent to host A's own queue, so that the test chooses which worker claims it; the
sweep queues it on the default queue, which the live worker takes. Every process is stopped by
its process id.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from celery import Celery
from django.utils import timezone

from annotator.models import QueuedTask
from dataset.exports import export_path
from dataset.models import ExportJob
from labeling.models import ProjectIssue
from tests.builders import final_issue
from tests.faults.services import (
    PrivateRedis,
    celery_worker,
    database_url,
    export_built_once,
    stop_process,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

HEARTBEAT, STALE, SWEEP = 1, 3, 1  # seconds (15, 120 and 60 by default)
VISIBILITY = 3600  # the lost message would come back after an hour, not within the test
HOST_A = "host-a"
HOST_A_QUEUE = "host-a"
STEP_MS = 2000  # each step of host A's build: a middle to kill it in
# From host A's death to the export built by the live worker: the stale time, a sweep, the
# hand-over and the build, with room for a loaded 2-core host (8.6 to 9.5 s at a load of 9).
BOUND = STALE + SWEEP + 16


class Processes:
    """The test's Redis and workers, each with its log; all stopped by their ids at the end."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.redis = PrivateRedis()
        self.procs: list[subprocess.Popen] = []
        # Not the current app: a later test in this process must not send to this Redis.
        self.sender = Celery("sender", broker=self.redis.url, set_as_current=False)

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "DATABASE_URL": database_url(),
            "REDIS_URL": self.redis.url,
            "DATA_DIR": str(self.directory),
            "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY),
            "CELERY_RESTORE_INTERVAL": "1",
            "JOB_HEARTBEAT_SECONDS": str(HEARTBEAT),
            "JOB_STALE_SECONDS": str(STALE),
            "JOB_SWEEP_SECONDS": str(SWEEP),
            "BEAT_LOCK_SECONDS": "5",
            **extra,
        }

    def worker(self, name: str, env: dict[str, str], **options) -> subprocess.Popen:
        with self.log(name).open("ab") as log:
            proc = celery_worker(
                env, hostname=f"{name}@%h", loglevel="info", stdout=log, stderr=subprocess.STDOUT,
                **options,
            )  # fmt: skip
        self.procs.append(proc)
        return proc

    def log(self, name: str) -> Path:
        return self.directory / f"{name}.log"

    def ready(self, name: str, proc: subprocess.Popen) -> bool:
        assert proc.poll() is None, self.log(name).read_text()[-3000:]
        return " ready." in self.log(name).read_text()

    def close(self) -> None:
        for proc in self.procs:
            stop_process(proc)
        self.sender.close()
        self.redis.close()


@pytest.fixture
def processes(tmp_path, settings) -> Iterator[Processes]:
    settings.EXPORT_ROOT = tmp_path / "exports"
    started = Processes(tmp_path)
    try:
        yield started
    finally:
        started.close()


def _held(broker: redis.Redis, task_id: str) -> bool:
    """Whether Redis holds the task's message unacknowledged (kombu's `unacked` hash: a worker
    took it and neither acknowledged it nor died long enough ago to hand it back)."""
    return any(task_id.encode() in message for message in broker.hvals("unacked"))


def _requeued(log: Path, job: ExportJob) -> int:
    """How many times the sweep said it queued the export again."""
    said = f"job export:{job.pk} was running under"
    lines = log.read_text().splitlines()
    return sum(1 for line in lines if said in line and "queued again" in line)


def test_an_export_of_a_lost_host_is_finished_once_by_a_live_worker_without_the_visibility_timeout(
    processes, project, issues_in_project, lead, tmp_path
):
    project.annotations_per_issue = 2
    project.save()
    for item in ProjectIssue.objects.filter(project=project).order_by("position")[:3]:
        final_issue(project, item, "C.1", "C.1")

    # Host A's worker, and a live worker of this host whose beat sweeps every second.
    host_a = processes.worker(
        "host-a",
        processes.env(JOB_STEP_DELAY_MS=str(STEP_MS)),
        queues=[HOST_A_QUEUE],
        as_host=HOST_A,
    )
    live = processes.worker("live", processes.env(), beat_schedule=tmp_path / "beat-schedule")
    wait_for(lambda: processes.ready("host-a", host_a), 90, "host A's worker to start")
    wait_for(lambda: processes.ready("live", live), 90, "the live worker to start")

    # Lena asks for an export; host A claims it.
    job = ExportJob.objects.create(project=project, requested_by=lead)
    sent = processes.sender.send_task("dataset.tasks.run_export", [job.pk], queue=HOST_A_QUEUE)

    def row() -> ExportJob:
        return ExportJob.objects.get(pk=job.pk)

    def building_on_host_a() -> bool:
        assert host_a.poll() is None, processes.log("host-a").read_text()[-3000:]
        now = row()
        return now.status == "running" and now.worker.startswith(f"{HOST_A}:") and bool(now.step)

    wait_for(building_on_host_a, 60, "host A to claim and start the export")
    claimed = row()
    # Longer than the stale time while host A beats: the sweep leaves its export alone.
    time.sleep(2 * STALE)
    alive = row()
    assert host_a.poll() is None and alive.status == "running" and alive.worker == claimed.worker
    assert alive.heartbeat_at > claimed.heartbeat_at  # host A's heartbeat moved on
    assert _requeued(processes.log("live"), job) == 0
    assert not QueuedTask.objects.exists()

    # Host A is lost (its worker SIGKILLed): its message stays unacknowledged in Redis.
    os.killpg(host_a.pid, signal.SIGKILL)
    host_a.wait(10)
    killed_at = timezone.now()
    last_heard = row().heartbeat_at
    broker = redis.Redis.from_url(processes.redis.url)
    try:
        assert _held(broker, sent.id)

        def done() -> bool:
            assert live.poll() is None, processes.log("live").read_text()[-3000:]
            return row().status == "done"

        wait_for(done, BOUND + 30, "the live worker to finish the lost host's export")
        job.refresh_from_db()
        # Taken over once host A had been silent for the stale time, not before, and built
        # well within the bound (the visibility timeout is an hour).
        host, _, pid = job.worker.rpartition(":")
        assert (host, int(pid)) == (socket.gethostname(), live.pid)
        assert (killed_at - last_heard).total_seconds() < STALE  # it beat until it died
        assert STALE <= (job.started_at - last_heard).total_seconds() <= STALE + SWEEP + 4
        assert (job.finished_at - killed_at).total_seconds() <= BOUND
        # Host A's message was never handed back: the sweep's delivery built it.
        assert _held(broker, sent.id)
        # Built once: one complete ZIP, alone in its folder; queued again once; outbox empty.
        path = export_path(job)
        built = export_built_once(job, path)
        wait_for(lambda: not QueuedTask.objects.exists(), 10, "the outbox to be empty")
        time.sleep(2 * SWEEP)  # later sweeps find the export done
        assert _requeued(processes.log("live"), job) == 1
        stop_process(live)

        # The visibility timeout passes (here a worker that waits one second): host A's own
        # message comes back, finds the export done and changes nothing.
        late = processes.worker(
            "late", processes.env(CELERY_VISIBILITY_TIMEOUT="1"), queues=[HOST_A_QUEUE]
        )
        finished = f"Task dataset.tasks.run_export[{sent.id}] succeeded"

        def ran_again() -> bool:
            assert late.poll() is None, processes.log("late").read_text()[-3000:]
            return finished in processes.log("late").read_text()

        wait_for(ran_again, 90, "host A's message to come back and run")
        wait_for(
            lambda: not _held(broker, sent.id) and broker.llen(HOST_A_QUEUE) == 0,
            30,
            "host A's message to be acknowledged",
        )
    finally:
        broker.close()
    job.refresh_from_db()
    assert job.status == "done"
    assert (path.stat().st_ino, path.stat().st_mtime_ns, job.sha256, job.finished_at) == built
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]
