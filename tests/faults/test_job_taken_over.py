"""A worker taken over while it still ran never ends the new owner's run (`lib.jobs.Job.end`).

Lena's job runs here. Midway, this worker is cut off (its database away for longer than
`JOB_STALE_SECONDS`, a long pause): another worker, "other-host:1", takes the job over, as
`Job.claim` writes it (`worker`, `heartbeat_at`). Then this worker comes back and finishes
its work, for each kind of job (export, release, upload, rater run, recall ranking) and both
ways:

- it succeeds, after the other worker already ended the job `done` and published its file or
  its scores: the row keeps the other worker's end, its file is not replaced (same bytes, no
  `.part` or build folder left beside it), its scores and the rater's version stay theirs;
- it fails, while the other worker still runs the job: the row stays the other worker's
  (`running`, no error), and what it works on (the uploaded file) is left to it.

The takeover happens at the first step the work reports (`lib.jobclaim.step_pause`; an
upload's when it reads its file), by a thread on a database connection of its own (a
release reads in one read-only transaction meanwhile). Fast tier: no process is started;
real PostgreSQL.
"""

from __future__ import annotations

import hashlib
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.db import DatabaseError, connection
from django.utils import timezone

from dataset import uploads
from dataset.beyond_keywords import begin_ranking, run_ranking_job
from dataset.exports import export_path, run_export_job
from dataset.models import ExportJob, RankedIssue, RecallRanking, Release, UploadJob
from dataset.releases import build_release, create_release, release_path
from dataset.uploads import keep_file, run_upload_job, upload_path
from ingest.models import Issue
from labeling.models import MachineRater
from lib import jobclaim
from lib.jobs import Job
from raters import runs
from raters.models import RaterRun
from raters.runs import RaterSettings, add_rater, create_run, run_rater
from tests.raters.conftest import add_finals, fit_once  # noqa: F401 (a fixture)

# Committed: the other worker writes on a connection of its own.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fit_once")]

OTHER = "other-host:1"
ENDED_AT = datetime(2026, 11, 28, 3, 0, tzinfo=UTC)
CUT_OFF = "server closed the connection unexpectedly"  # what this worker's work then fails with


@dataclass
class Kind:
    """How Lena's job of one kind is asked for and run, and how the other worker ends it."""

    make: Callable[[dict[str, Any]], Job]
    run: Callable[[Job], object]
    # The other worker's end: the fields it writes beside `done`, after publishing its result.
    other_end: Callable[[Job], dict[str, Any]]
    # What the other worker's end published (a file's bytes, scores, a rater's version).
    published: Callable[[Job], object]
    # What the other worker leaves beside the final name while it still runs (its `.part`).
    working: Callable[[Job], None] = lambda job: None


def _export(f: dict[str, Any]) -> ExportJob:
    return ExportJob.objects.create(project=f["project"], requested_by=f["lead"], everything=True)


def _export_end(job: Job) -> dict[str, Any]:
    assert isinstance(job, ExportJob)
    path = export_path(job)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"the other worker's export")
    return {
        "file_path": str(path.relative_to(path.parents[1])),
        "size": path.stat().st_size,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "progress": 100,
        "step": "done",
    }


def _folder(path: Path) -> dict[str, bytes]:
    """Every entry beside a published file but this process's own `.part-<pid>` and
    `.build-<id>-<pid>` (the work in progress it deletes itself; `_own_work_left`)."""
    if not path.parent.is_dir():
        return {}
    return {
        p.name: p.read_bytes() if p.is_file() else b"<folder>"
        for p in path.parent.iterdir()
        if not p.name.endswith(f"-{os.getpid()}")
    }


def _own_work_left(path: Path) -> list[str]:
    return [p.name for p in path.parent.iterdir() if p.name.endswith(f"-{os.getpid()}")]


def _part_of_the_other(path: Path) -> None:
    """The other worker's file in progress beside the final name (as it names it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_name(f"{path.name}.part-1").write_bytes(b"the other worker's half-written file")


def _release(f: dict[str, Any]) -> Release:
    return create_release(f["project"], f["lead"], "1.0.0", "the pilot's first release")


def _release_end(job: Job) -> dict[str, Any]:
    assert isinstance(job, Release)
    path = release_path(job)
    path.write_bytes(b"the other worker's release")
    return {
        "file_path": f"{job.project_id}/{path.name}",
        "size": path.stat().st_size,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "manifest": {"built_by": OTHER},
        "progress": 100,
        "step": "done",
    }


def _upload(f: dict[str, Any]) -> UploadJob:
    data = b"url,title\nhttps://lists.example.org/ml/1,Message 1\n"
    return keep_file(f["project"], f["lead"], "ml.csv", data, "csv", "ml", False, True, False)


def _uploaded_file(job: Job) -> bytes | None:
    assert isinstance(job, UploadJob)
    path = upload_path(job)
    return path.read_bytes() if path.is_file() else None


def _upload_end(job: Job) -> dict[str, Any]:
    return {"figures": {"new_issues": 1}, "progress": 100, "step": ""}


def _rater_run(f: dict[str, Any]) -> RaterRun:
    rater = add_rater(f["project"], RaterSettings(name="tfidf", kind="classifier"), f["lead"])
    return create_run(rater)


def _rater_run_end(job: Job) -> dict[str, Any]:
    assert isinstance(job, RaterRun)
    MachineRater.objects.filter(pk=job.rater_id).update(version=7, trained_on=60)
    return {"done": 70, "total": 70, "invalid": 1}


def _rater_version(job: Job) -> object:
    assert isinstance(job, RaterRun)
    return MachineRater.objects.filter(pk=job.rater_id).values("version", "trained_on").get()


def _ranking(f: dict[str, Any]) -> RecallRanking:
    return begin_ranking(f["project"], None, 0, f["lead"])[0]


def _ranking_end(job: Job) -> dict[str, Any]:
    issue = Issue.objects.order_by("pk").first()
    RankedIssue.objects.create(ranking_id=job.pk, issue=issue, relevance=0.125)
    return {"trained_on": 60, "scored": 1, "progress": 100}


def _scores(job: Job) -> object:
    return sorted(RankedIssue.objects.filter(ranking_id=job.pk).values_list("issue", "relevance"))


KINDS = {
    "export": Kind(
        _export,
        lambda job: run_export_job(job.pk),
        _export_end,
        lambda job: _folder(export_path(job)),
        lambda job: _part_of_the_other(export_path(job)),
    ),
    "release": Kind(
        _release,
        lambda job: build_release(job.pk),
        _release_end,
        lambda job: _folder(release_path(job)),
        lambda job: _part_of_the_other(release_path(job)),
    ),
    "upload": Kind(_upload, lambda job: run_upload_job(job.pk), _upload_end, _uploaded_file),
    "rater run": Kind(_rater_run, lambda job: run_rater(job.pk), _rater_run_end, _rater_version),
    "recall ranking": Kind(_ranking, lambda job: run_ranking_job(job.pk), _ranking_end, _scores),
}


def _row(job: Job) -> dict[str, Any]:
    return type(job)._base_manager.filter(pk=job.pk).values().get()


@pytest.fixture
def finals(project, repository, annotator, other_annotator) -> list[Issue]:
    """60 final issues in Lena's project (a classifier learns from them) and 10 open ones."""
    return add_finals(
        project, repository, 60, annotators=(annotator, other_annotator), open_issues=10
    )


@pytest.fixture
def roots(settings, tmp_path):
    settings.EXPORT_ROOT = tmp_path / "exports"
    settings.UPLOAD_ROOT = tmp_path / "uploads"


def _take_over_midway(monkeypatch, job: Job, kind: Kind, other_done: bool) -> dict[str, Any]:
    """At the work's first step, the other worker takes the job over (and, with `other_done`,
    ends it `done` and publishes its result); without it, this worker's work then fails, cut
    off. What the other worker left is filled in the returned dict when it happens."""
    left: dict[str, Any] = {}
    real_pause, real_read = jobclaim.step_pause, uploads.read_issue_file

    def take_over() -> None:
        other = threading.Thread(target=the_other_worker)
        other.start()
        other.join(timeout=30)
        assert left, "the other worker failed to take the job over"
        if not other_done:
            raise DatabaseError(CUT_OFF)

    def the_other_worker() -> None:
        try:
            takes_over()
        finally:
            connection.close()

    def takes_over() -> None:
        # On a connection of its own, committed at once, as another worker's.
        model = type(job)
        model._base_manager.filter(pk=job.pk).update(worker=OTHER, heartbeat_at=timezone.now())
        taken = model._base_manager.get(pk=job.pk)
        if other_done:
            fields = kind.other_end(taken)
            model._base_manager.filter(pk=job.pk).update(
                status="done", finished_at=ENDED_AT, **fields
            )
        else:
            kind.working(taken)
        left["published"] = kind.published(taken)
        left["row"] = _row(job)

    def pause() -> None:
        if not left:
            take_over()
        real_pause()

    def read(*args: Any, **kwargs: Any) -> Any:
        if not left:
            take_over()
        return real_read(*args, **kwargs)

    monkeypatch.setattr(jobclaim, "step_pause", pause)
    monkeypatch.setattr(uploads, "read_issue_file", read)
    return left


@pytest.mark.parametrize("name", KINDS)
def test_a_worker_taken_over_finishes_after_the_new_owner_and_leaves_its_end_alone(
    name, project, lead, finals, roots, monkeypatch
):
    kind = KINDS[name]
    job = kind.make({"project": project, "lead": lead})
    left = _take_over_midway(monkeypatch, job, kind, other_done=True)

    kind.run(job)  # this worker comes back and finishes its work

    assert left, "the work never reached the step where the other worker takes over"
    assert left["row"]["status"] == "done" and left["row"]["worker"] == OTHER
    assert _row(job) == left["row"]  # the other worker's end, as it wrote it
    assert kind.published(job) == left["published"]  # its file, scores, rater version
    if isinstance(job, ExportJob | Release):
        path = export_path(job) if isinstance(job, ExportJob) else release_path(job)
        assert _own_work_left(path) == []  # this worker's `.part` and build folder deleted


@pytest.mark.parametrize("name", KINDS)
def test_a_worker_taken_over_that_fails_leaves_the_job_running_under_the_new_owner(
    name, project, lead, finals, roots, monkeypatch
):
    kind = KINDS[name]
    job = kind.make({"project": project, "lead": lead})
    left = _take_over_midway(monkeypatch, job, kind, other_done=False)

    try:
        kind.run(job)  # this worker's work fails, cut off
    except DatabaseError as exc:
        assert str(exc) == CUT_OFF  # said as it failed (a rater run stores it instead)

    assert left, "the work never reached the step where the other worker takes over"
    row = _row(job)
    assert (row["status"], row["worker"]) == ("running", OTHER)
    assert row == left["row"]  # no error, no end, no progress written over it
    assert kind.published(job) == left["published"]  # the other's `.part`, the uploaded file


def test_a_stale_rater_run_taken_over_while_lena_asks_for_a_new_run_is_left_running(
    project, lead, monkeypatch
):
    """Lena asks for a new run of her rater while its last run, left `running` by a worker
    that died, is taken over by a delivery of its task: the run she would have stopped runs
    again under the other worker, so her request is refused as busy, not a second run."""
    rater = add_rater(project, RaterSettings(name="tfidf", kind="classifier"), lead)
    dead = f"{socket.gethostname()}:{2**22 + 1}"  # above Linux's highest pid
    run = create_run(rater)
    RaterRun.objects.filter(pk=run.pk).update(
        status="running", worker=dead, heartbeat_at=timezone.now()
    )
    real_unfinished = runs.unfinished_run

    def read_then_taken_over(rater: MachineRater) -> RaterRun | None:
        read = real_unfinished(rater)  # read stale: its worker is gone

        def claim() -> None:
            try:
                RaterRun.objects.filter(pk=run.pk).update(worker=OTHER, heartbeat_at=timezone.now())
            finally:
                connection.close()

        other = threading.Thread(target=claim)
        other.start()
        other.join(timeout=30)
        return read

    monkeypatch.setattr(runs, "unfinished_run", read_then_taken_over)
    with pytest.raises(runs.RaterBusy, match="is running"):
        runs.begin_run(rater, user=lead)
    row = _row(run)
    assert (row["status"], row["worker"], row["error"]) == ("running", OTHER, "")
    assert RaterRun.objects.filter(rater=rater).count() == 1
