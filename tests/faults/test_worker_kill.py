"""A Celery worker killed with SIGKILL in the middle of an export, a release, a classifier run
and an upload's import: the broker hands the unacknowledged message to the other worker, which
takes the job over (its worker's pid is gone: `lib.jobclaim`, `raters.liveness`) and finishes
it exactly once: one file, complete, its checksum right, no half-written file left; one run,
one label per issue; each uploaded issue stored and queued once, the uploaded file deleted.

Two `celery worker` processes (solo pool) on a redis-server of the test's own, with a
3-second visibility timeout (`CELERY_VISIBILITY_TIMEOUT`), looked at every second
(`CELERY_RESTORE_INTERVAL`), so the message comes back within seconds, and each job step
slowed by `JOB_STEP_DELAY_MS` so there is a middle to kill it in. The worker that claimed the
job is the one named in the job's row ("host:pid"); the test kills that pid and no other.
Every process started is stopped by its pid. A sync killed mid-run: tests/ingest/test_worker.py.

A worker of the prefork pool (`-P prefork -c 1`, as a deployment runs it) loses the pool's
child running an export (SIGKILL to the child, whose pid the job's row names): the worker's
main process replaces the child and hands the task again (`task_reject_on_worker_lost`), and
the export is finished once. A job of a worker on another host: tests/faults/test_job_heartbeat.py.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import socket
import subprocess
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from celery import Celery

from dataset.exports import export_path
from dataset.models import ExportJob, Release, UploadJob
from dataset.releases import create_release, release_path
from dataset.uploads import keep_file
from ingest.models import Issue
from labeling.models import MachineLabel, ProjectIssue
from raters.models import RaterRun
from raters.runs import RaterSettings, add_rater, create_run
from tests.builders import final_issue
from tests.faults.services import (
    PrivateRedis,
    celery_worker,
    database_url,
    export_built_once,
    sha256,
    stop_process,
    wait_for,
)
from tests.raters.conftest import add_finals

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
DELAY_MS = 800  # each step of a job; the test kills its worker within the first steps


class Workers:
    """Celery workers on the private Redis; `ensure(2)` keeps two alive."""

    def __init__(self, redis: PrivateRedis, data_dir: Path) -> None:
        self.redis, self.data_dir = redis, data_dir
        self.procs: list[subprocess.Popen] = []
        # Not the current app: the outbox publishes through `current_app`, and a later test in
        # this process must not send its tasks to this test's (stopped) Redis.
        self.sender = Celery("sender", broker=redis.url, set_as_current=False)

    def start(self, pool: str = "solo") -> subprocess.Popen:
        env = {
            "DATABASE_URL": database_url(),
            "REDIS_URL": self.redis.url,
            "DATA_DIR": str(self.data_dir),
            "CELERY_VISIBILITY_TIMEOUT": "3",
            "CELERY_RESTORE_INTERVAL": "1",
            "JOB_STEP_DELAY_MS": str(DELAY_MS),
        }
        proc = celery_worker(env, pool=pool, concurrency=1, hostname=f"w{len(self.procs)}@%h")
        self.procs.append(proc)
        return proc

    def alive(self) -> list[subprocess.Popen]:
        return [p for p in self.procs if p.poll() is None]

    def ensure(self, n: int) -> None:
        while len(self.alive()) < n:
            self.start()

    def send(self, task: str, *args: int) -> None:
        self.sender.send_task(task, args=list(args))

    def kill_claimer(self, worker: str) -> int:
        """SIGKILL the worker named in a job's row ("host:pid"): one of ours, alive."""
        host, _, pid = worker.rpartition(":")
        assert host == socket.gethostname()
        ours = {p.pid: p for p in self.alive()}
        assert int(pid) in ours, f"{worker} is not one of the test's live workers"
        ours[int(pid)].send_signal(signal.SIGKILL)
        ours[int(pid)].wait(10)
        return int(pid)

    def close(self) -> None:
        for proc in self.procs:
            stop_process(proc)
        self.sender.close()


@pytest.fixture
def workers(tmp_path, settings) -> Iterator[Workers]:
    settings.EXPORT_ROOT = tmp_path / "exports"
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    redis = PrivateRedis()
    pool = Workers(redis, tmp_path)
    try:
        pool.ensure(2)
        yield pool
    finally:
        pool.close()
        redis.close()


@pytest.fixture
def study(project, issues_in_project, repository, annotator, other_annotator):
    project.annotations_per_issue = 2
    project.save()
    for item in ProjectIssue.objects.filter(project=project).order_by("position")[:4]:
        final_issue(project, item, "C.1", "C.1")
    add_finals(project, repository, 40, annotators=(annotator, other_annotator), open_issues=5)
    return project


def _claimed(read: Callable[[], tuple[str, str]]) -> Callable[[], bool]:
    def check() -> bool:
        status, worker = read()
        return status == "running" and bool(worker)

    return check


def _kill_mid_job(workers: Workers, read: Callable[[], tuple[str, str]], what: str) -> int:
    wait_for(_claimed(read), 60, f"a worker to claim the {what}")
    return workers.kill_claimer(read()[1])


def test_a_worker_killed_mid_job_leaves_it_to_the_other_which_finishes_it_once(
    workers, study, lead, settings
):
    # Alice asks for an export; the worker building it is killed in the middle.
    job = ExportJob.objects.create(project=study, requested_by=lead)
    workers.send("dataset.tasks.run_export", job.pk)

    def export_row() -> tuple[str, str]:
        row = ExportJob.objects.get(pk=job.pk)
        return row.status, row.worker

    killed = _kill_mid_job(workers, export_row, "export")
    assert ExportJob.objects.get(pk=job.pk).progress < 100
    wait_for(lambda: export_row()[0] == "done", 90, "the other worker to finish the export")
    job.refresh_from_db()
    assert job.worker.rpartition(":")[2] != str(killed)
    # One complete file, no part of the killed build left beside it.
    export_built_once(job, export_path(job))

    # A release: the same.
    workers.ensure(2)
    release = create_release(study, lead, "1.0.0")
    workers.send("dataset.tasks.run_release", release.pk)

    def release_row() -> tuple[str, str]:
        row = Release.objects.get(pk=release.pk)
        return row.status, row.worker

    killed = _kill_mid_job(workers, release_row, "release")
    wait_for(lambda: release_row()[0] == "done", 90, "the other worker to finish the release")
    release.refresh_from_db()
    assert release.worker.rpartition(":")[2] != str(killed)
    assert Release.objects.filter(project=study).count() == 1
    final = release_path(release)
    assert sha256(final) == release.sha256
    with zipfile.ZipFile(final) as zf:
        assert zf.testzip() is None
        for entry in release.manifest["files"]:
            assert hashlib.sha256(zf.read(entry["name"])).hexdigest() == entry["sha256"]
    assert sorted(p.name for p in final.parent.iterdir()) == [final.name]

    # A classifier run: one run, one label per issue of its scope.
    workers.ensure(2)
    rater = add_rater(study, RaterSettings(name="tfidf", kind="classifier"), lead)
    run = create_run(rater)
    workers.send("raters.tasks.run_rater_task", run.pk)

    def run_row() -> tuple[str, str]:
        row = RaterRun.objects.get(pk=run.pk)
        return row.status, row.worker

    killed = _kill_mid_job(workers, run_row, "rater run")
    wait_for(lambda: run_row()[0] == "done", 120, "the other worker to finish the rater run")
    run.refresh_from_db()
    assert run.worker.rpartition(":")[2] != str(killed)
    assert RaterRun.objects.filter(rater=rater).count() == 1
    labels = MachineLabel.objects.filter(run=run)
    scope = ProjectIssue.objects.filter(project=study).count()
    assert run.total == run.done == scope
    assert labels.count() == labels.values("issue").distinct().count() == scope

    # An upload of 300 issues imported: its transaction died with the killed worker; the
    # other imports each issue once and puts it in the queue once.
    workers.ensure(2)
    rows = ["url,title,body"] + [
        f"https://lists.example.org/ml/{n},Message {n},Body {n}" for n in range(1, 301)
    ]
    data = ("\n".join(rows) + "\n").encode()
    upload = keep_file(study, lead, "archive.csv", data, "csv", "ml", False, True, False)
    in_queue = ProjectIssue.objects.filter(project=study).count()
    workers.send("dataset.tasks.run_upload", upload.pk)

    def upload_row() -> tuple[str, str]:
        row = UploadJob.objects.get(pk=upload.pk)
        return row.status, row.worker

    killed = _kill_mid_job(workers, upload_row, "upload")
    wait_for(lambda: upload_row()[0] == "done", 90, "the other worker to import the upload")
    upload.refresh_from_db()
    assert upload.worker.rpartition(":")[2] != str(killed)
    imported = Issue.objects.filter(url__startswith="https://lists.example.org/ml/")
    assert imported.count() == imported.values("url").distinct().count() == 300
    assert ProjectIssue.objects.filter(project=study).count() == in_queue + 300
    assert upload.figures["added_to_queue"] == 300
    assert list((settings.UPLOAD_ROOT).iterdir()) == []


def _children(pid: int) -> set[int]:
    """The live processes whose parent is `pid` (read from /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state, parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
        except (OSError, ValueError):
            continue  # ended meanwhile
        if int(parent) == pid and state != "Z":
            found.add(int(entry.name))
    return found


@pytest.fixture
def prefork_worker(tmp_path, settings) -> Iterator[Workers]:
    settings.EXPORT_ROOT = tmp_path / "exports"
    redis_server = PrivateRedis()
    pool = Workers(redis_server, tmp_path)
    try:
        main = pool.start("prefork")
        wait_for(lambda: bool(_children(main.pid)), 60, "the pool's child to start")
        yield pool
    finally:
        children = _children(pool.procs[0].pid) if pool.procs else set()
        pool.close()
        for child in children:  # a child its main process left behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        redis_server.close()


def test_a_prefork_pool_child_killed_mid_export_is_replaced_and_the_export_finished_once(
    prefork_worker, study, lead
):
    main = prefork_worker.procs[0]
    # Lena asks for an export; the pool's child building it is killed in the middle.
    job = ExportJob.objects.create(project=study, requested_by=lead)
    prefork_worker.send("dataset.tasks.run_export", job.pk)

    def export_row() -> tuple[str, str]:
        row = ExportJob.objects.get(pk=job.pk)
        return row.status, row.worker

    wait_for(_claimed(export_row), 60, "the pool's child to claim the export")
    host, _, pid = export_row()[1].rpartition(":")
    child = int(pid)
    assert host == socket.gethostname()
    assert child != main.pid and child in _children(main.pid)  # the child, not the worker
    os.kill(child, signal.SIGKILL)
    assert ExportJob.objects.get(pk=job.pk).progress < 100

    wait_for(lambda: export_row()[0] == "done", 90, "the pool's next child to finish the export")
    job.refresh_from_db()
    assert main.poll() is None  # the worker lives on; its pool replaced the child
    taker = int(job.worker.rpartition(":")[2])
    assert taker != child and taker in _children(main.pid)
    path = export_path(job)
    built = export_built_once(job, path)

    # Finished once: the task's message acknowledged, none left queued or held unacknowledged
    # (so no delivery is still to come), and the file and row as the one build left them.
    broker = redis.Redis.from_url(prefork_worker.redis.url)
    try:
        wait_for(
            lambda: broker.llen("celery") == 0 and broker.hlen("unacked") == 0,
            30,
            "the export's message to be acknowledged",
        )
    finally:
        broker.close()
    job.refresh_from_db()
    assert (path.stat().st_ino, path.stat().st_mtime_ns, job.sha256, job.finished_at) == built
