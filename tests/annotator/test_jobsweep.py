"""The sweep of jobs left `running` by a worker that is gone (`annotator.jobsweep`): each kind's
task is queued again through the outbox, once while that re-queue waits; a job whose worker is
heard of, a job that ended or is still queued, and a job of a live process of this host are
left alone. The lost worker's own message, when the broker's visibility timeout brings it back
after the sweep's delivery built the job, finds it done and changes nothing.

Lena, the lead, asked for each job; "worker-7.internal", the host that ran it, was lost.
"""

from __future__ import annotations

import os
import socket
from datetime import timedelta

import pytest
from django.utils import timezone

from annotator import jobsweep, outbox
from annotator.models import QueuedTask
from dataset.exports import export_path
from dataset.models import ExportJob, RecallRanking, Release, UploadJob
from labeling.models import ProjectIssue
from lib import jobclaim, metrics
from lib.jobs import Job
from raters.models import RaterRun
from raters.runs import begin_run, unfinished_run
from tests.builders import final_issue
from tests.job_helpers import KINDS, make_job
from tests.metrics_helpers import value

pytestmark = pytest.mark.django_db

LOST = "worker-7.internal:4242"  # a worker of another host, lost with it
STALE = 120  # JOB_STALE_SECONDS, as deployed
# Each kind's task by its Celery name, as the workers register it (dataset.tasks, raters.tasks).
TASKS = {
    ExportJob: "dataset.tasks.run_export",
    UploadJob: "dataset.tasks.run_upload",
    Release: "dataset.tasks.run_release",
    RaterRun: "raters.tasks.run_rater_task",
    RecallRanking: "dataset.tasks.run_ranking",
}
COUNTER = "annotator_jobs_requeued_total"


@pytest.fixture(autouse=True)
def _stale_time(settings) -> None:
    settings.JOB_STALE_SECONDS = STALE


def _ago(seconds: float):
    return timezone.now() - timedelta(seconds=seconds)


def _args(job: Job) -> list:
    # An upload is queued again without its uploader's language (None: the site's default).
    return [job.pk, None] if isinstance(job, UploadJob) else [job.pk]


def _waiting(kind: type[Job]) -> list[tuple[str, list]]:
    return [(row.task, list(row.args)) for row in QueuedTask.objects.filter(task=TASKS[kind])]


def _counted(kind: str) -> float:
    text, _ = metrics.exposition(scrape_gauges=False)
    return value(text.decode(), COUNTER, kind=kind)


def test_the_sweep_finds_every_kind_of_job():
    assert set(jobsweep.job_kinds()) == set(TASKS)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_a_job_left_running_by_a_lost_host_is_queued_again_once(kind, project, caplog):
    # Lena's job: its worker's host was lost 2.5 minutes ago, its heartbeat stopped with it.
    job = make_job(kind, project, status="running", worker=LOST, heartbeat_at=_ago(STALE + 30))
    counted = _counted(job.JOB_KIND)

    with caplog.at_level("WARNING", logger="annotator.jobsweep"):
        assert [j.pk for j in jobsweep.requeue_stale()] == [job.pk]
    assert _waiting(kind) == [(TASKS[kind], _args(job))]
    said = [r.getMessage() for r in caplog.records if r.name == "annotator.jobsweep"]
    assert len(said) == 1 and f"{job.JOB_KIND}:{job.pk}" in said[0] and LOST in said[0]
    assert _counted(job.JOB_KIND) - counted == 1

    # A minute later no worker has taken it yet (none free, or the broker away): the row
    # waiting for it is enough.
    assert jobsweep.requeue_stale() == []
    assert _waiting(kind) == [(TASKS[kind], _args(job))]
    assert _counted(job.JOB_KIND) - counted == 1
    # The job itself is left as it was: the delivery that claims it takes it over.
    row = kind._base_manager.get(pk=job.pk)
    assert (row.status, row.worker) == ("running", LOST)

    # A worker started that task (its row deleted) and was lost too: queued again, once.
    QueuedTask.objects.filter(task=TASKS[kind]).delete()
    assert [j.pk for j in jobsweep.requeue_stale()] == [job.pk]
    assert _waiting(kind) == [(TASKS[kind], _args(job))]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_a_job_whose_worker_may_still_run_it_or_that_is_not_running_is_left_alone(kind, project):
    alive_here = f"{socket.gethostname()}:{os.getppid()}"  # a live process of this host
    left_alone = [
        # Heard of a minute ago: a worker of another host still running it.
        make_job(kind, project, status="running", worker=LOST, heartbeat_at=_ago(STALE - 60)),
        # Ended, long ago.
        make_job(kind, project, status="done", worker=LOST, heartbeat_at=_ago(3600)),
        make_job(kind, project, status="failed", worker=LOST, heartbeat_at=_ago(3600)),
        # Still queued: the outbox's own sweep hands its task over.
        make_job(kind, project),
        # A live process of this host, silent for 10 minutes (its pid says it lives).
        make_job(kind, project, status="running", worker=alive_here, heartbeat_at=_ago(600)),
    ]
    assert len({job.pk for job in left_alone}) == 5

    assert jobsweep.requeue_stale() == []
    assert _waiting(kind) == []

    # The probe: the first, once silent for longer than the stale time, is queued again.
    kind._base_manager.filter(pk=left_alone[0].pk).update(heartbeat_at=_ago(STALE + 1))
    assert [j.pk for j in jobsweep.requeue_stale()] == [left_alone[0].pk]


def test_a_job_claimed_before_the_sweep_queues_it_is_left_to_its_new_worker(project):
    # Read as stale, then claimed by a delivery (the lost worker's message came back) before
    # the sweep's turn: the sweep reads the row again under its lock and queues nothing.
    job = make_job(ExportJob, project, status="running", worker=LOST, heartbeat_at=_ago(STALE + 5))
    ExportJob.objects.filter(pk=job.pk).update(
        worker="worker-8.internal:77", heartbeat_at=timezone.now()
    )
    assert jobsweep._requeue(ExportJob, job.pk) is None
    assert _waiting(ExportJob) == []


def test_the_sweeps_delivery_builds_the_export_and_the_lost_workers_own_message_changes_nothing(
    project, issues_in_project, lead, settings, tmp_path
):
    settings.EXPORT_ROOT = tmp_path / "exports"
    project.annotations_per_issue = 2
    project.save()
    for item in ProjectIssue.objects.filter(project=project).order_by("position")[:2]:
        final_issue(project, item, "C.1", "C.1")
    # Lena's export was half built on the lost host.
    job = make_job(
        ExportJob,
        project,
        requested_by=lead,
        status="running",
        worker=LOST,
        heartbeat_at=_ago(STALE + 30),
        progress=40,
    )
    assert [j.pk for j in jobsweep.requeue_stale()] == [job.pk]
    (row,) = QueuedTask.objects.filter(task=TASKS[ExportJob], args=[job.pk])

    outbox.run_here(row.pk)  # a live worker takes the task, as Celery would
    job.refresh_from_db()
    assert (job.status, job.worker, job.progress) == ("done", jobclaim.this_worker(), 100)
    path = export_path(job)
    built = (path.stat().st_ino, path.stat().st_mtime_ns, job.sha256, job.finished_at)
    assert job.sha256 and path.stat().st_size == job.size

    # The broker's visibility timeout brings the lost worker's message back: the task finds
    # the export done and builds nothing.
    app = outbox.celery_app()
    app.loader.import_default_modules()
    app.tasks[TASKS[ExportJob]](job.pk)
    job.refresh_from_db()
    assert (path.stat().st_ino, path.stat().st_mtime_ns, job.sha256, job.finished_at) == built
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]
    # Done: no sweep queues it again.
    assert jobsweep.requeue_stale() == []
    assert QueuedTask.objects.count() == 0


def test_a_rater_run_replaced_while_its_requeued_task_waits_is_not_run_again(project):
    """Lena's rater run was lost with its host and the sweep queued it again; before a worker
    was free she started a new run, which ended the old one failed. The old run's delivery
    then finds it replaced: it does nothing (two runs of one rater never overlap), while a
    failed run nobody replaced is still resumed."""
    old = make_job(RaterRun, project, status="running", worker=LOST, heartbeat_at=_ago(STALE + 30))
    assert [j.pk for j in jobsweep.requeue_stale()] == [old.pk]
    rater = old.rater
    new = begin_run(rater, user=None)
    old.refresh_from_db()
    assert old.status == "failed" and new.pk != old.pk
    assert unfinished_run(rater).pk == new.pk

    assert old.claim() is False  # the sweep's delivery of the replaced run
    old.refresh_from_db()
    assert (old.status, old.worker) == ("failed", LOST)

    # The control: the newest run failed and nobody replaced it: a delivery resumes it.
    RaterRun.objects.filter(pk=new.pk).update(status="failed")
    new.refresh_from_db()
    assert new.claim() is True
    new.unclaim()
    assert RaterRun.objects.get(pk=new.pk).status == "running"
