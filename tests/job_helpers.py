"""Jobs of every kind (`lib.jobs.Job`) for the tests of their lifecycle: `make_job(kind,
project, **fields)` makes a queued job of that kind and writes `fields` (a status, a worker, a
heartbeat) on its row, as a worker of the test's choosing would have left it."""

from __future__ import annotations

import itertools
from typing import Any

from dataset.models import ExportJob, RecallRanking, Release, UploadJob
from lib.jobs import Job
from raters.models import RaterRun

KINDS: list[type[Job]] = [ExportJob, UploadJob, Release, RaterRun, RecallRanking]
_numbers = itertools.count(1)


def make_job(kind: type[Job], project, **fields) -> Job:
    """A queued job of that kind in `project`, with `fields` written on its row."""
    n = next(_numbers)
    if kind is ExportJob:
        job: Job = ExportJob.objects.create(project=project)
    elif kind is UploadJob:
        job = UploadJob.objects.create(project=project, file_name="a.csv", kind="csv", source="x")
    elif kind is Release:
        job = Release.objects.create(project=project, version=f"1.0.{n}")
    elif kind is RecallRanking:
        job = RecallRanking.objects.create(project=project, rater_version=n)
    else:
        # The rater's model through the run, wherever its app keeps it.
        raters: Any = RaterRun._meta.get_field("rater").related_model
        rater = raters._default_manager.create(project=project, name=f"r{n}", kind="classifier")
        job = RaterRun.objects.create(rater=rater)
    type(job)._default_manager.filter(pk=job.pk).update(**fields)
    job.refresh_from_db()
    return job
