"""Uploading issues in the browser: a file kept for its task, read, checked, stored, queued.

A lead (or admin) uploads a CSV, JSON Lines or URL-list file on the project's upload page.
`preview` reads its first rows in the request. `start_upload` keeps the file under
`settings.UPLOAD_ROOT` (`keep_file`) and queues `run_upload_job` (the Celery task
`dataset.tasks.run_upload`, also what `manage.py upload_issues` runs): it reads the whole
file (`ingest.issue_files`, with progress on the job), checks it against what is stored, and
either stops there (a dry run: every problem by line, and what an import would do) or stores
it all in one transaction (`ingest.uploads.store`) with the issues added to the end of the
project's queue and their repositories to its scope (`ingest.permissions.attach`, so a later
scope change keeps them). The checks run with the uploader's rights (`ingest.uploads.Target`):
a lead cannot upload into a repository they may not put in the project's scope, and an upload
never rewrites an issue outside the project's own upload repository. A problem anywhere means
nothing is stored. The file is deleted when the task ends, whatever the outcome.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import Max
from django.utils import translation
from django.utils.translation import gettext, gettext_noop

from annotator import outbox
from annotator.models import Project
from dataset.models import UploadJob
from ingest.hydration import HYDRATE_TASK
from ingest.issue_files import PREVIEW_ROWS, Reading, guess_kind, read_issue_file
from ingest.models import Repository
from ingest.permissions import attach
from ingest.uploads import Outcome, Target, plan, store
from labeling.models import ProjectIssue
from lib import jobclaim, sql

READ_SHARE = 80  # percent of the progress bar for reading the file; storing is the rest


def upload_path(job: UploadJob) -> Path:
    return Path(settings.UPLOAD_ROOT) / job.file_path


def preview(upload: UploadedFile, kind: str | None) -> Reading:
    """The first rows of an uploaded file and the problems among them (nothing kept)."""
    upload.seek(0)
    data = upload.read()
    return read_issue_file(upload.name or "upload", data, kind or None, limit=PREVIEW_ROWS)


def keep_file(
    project: Project,
    user: User | None,
    name: str,
    data: bytes,
    kind: str,
    source: str,
    dry_run: bool,
    add_to_queue: bool,
    fetch: bool,
) -> UploadJob:
    """The job of a file, written under UPLOAD_ROOT by a name the server makes."""
    root = Path(settings.UPLOAD_ROOT)
    root.mkdir(parents=True, exist_ok=True)
    relative = f"{uuid.uuid4().hex}.upload"
    (root / relative).write_bytes(data)
    return UploadJob.objects.create(
        project=project,
        requested_by=user if user is not None and user.is_authenticated else None,
        file_name=name,
        file_path=relative,
        kind=kind,
        source=source,
        dry_run=dry_run,
        add_to_queue=add_to_queue,
        fetch=fetch,
    )


def _set(job: UploadJob, **fields: Any) -> None:
    for name, value in fields.items():
        setattr(job, name, value)
    UploadJob.objects.filter(pk=job.pk).update(**fields)


def _report(job: UploadJob, **fields: Any) -> None:
    """Where the running job is (its step, its progress), written only while it is this
    worker's (`Job.while_mine`): one taken over leaves it to the worker that took it over."""
    for name, value in fields.items():
        setattr(job, name, value)
    job.while_mine().update(**fields)


def run_upload_job(job_id: int, language: str | None = None) -> UploadJob | None:
    """Read, check and (unless a dry run) store a job's file; safe to run twice (a job that
    ended, or whose file is gone, is left as it is). The problems are written in `language`,
    the uploader's (the page's language when the job was queued), else the default, and in
    each other language of the site for a reader of that language (`UploadJob.shown_problems`)."""
    with translation.override(language or settings.LANGUAGE_CODE):
        return _run_upload_job(job_id)


def _run_upload_job(job_id: int) -> UploadJob | None:
    """Imported by the delivery that claims the job (`lib.jobs.Job.run_claimed`); None when
    there is no such job, and an ended one is left as it is. Raises `jobclaim.Busy` while
    another live process runs it. A job `running` under a worker that is gone (killed; its
    task delivered again) is taken over: its import is one transaction, which died with that
    worker's connection (`lib.jobclaim`)."""
    job = UploadJob.objects.select_related("project", "requested_by").filter(pk=job_id).first()
    return job.run_claimed(_run_claimed) if job is not None else None


def _run_claimed(job: UploadJob) -> UploadJob:
    path = upload_path(job)
    # False once another worker took the job over (`Job.end`): its file is its to delete.
    owned = True
    try:
        if not job.file_path or not path.is_file():
            gone = gettext_noop("the uploaded file is gone; upload it again")
            owned = job.end(
                UploadJob.Status.FAILED,
                step="",
                **_problem_fields(lambda: [f"{job.file_name}: " + gettext(gone)]),
            )
            return job
        _report(job, step="reading", progress=0)

        def progress(done: int, total: int) -> None:
            _report(job, progress=min(READ_SHARE, READ_SHARE * done // max(total, 1)))

        data = path.read_bytes()
        reading = read_issue_file(job.file_name, data, job.kind, progress=progress)
        _report(job, progress=READ_SHARE, step="checking" if job.dry_run else "storing")
        if job.dry_run:
            outcome = plan(reading, _target(job))
            outcome.problems = reading.problems + outcome.problems
        else:
            outcome = _import(job, reading)
        refused = bool(outcome.problems) and not job.dry_run
        # Nothing was stored when there are problems: the same file read and checked again
        # gives the same problems, said in each other language of the site for readers of it.
        problems = (
            _problem_fields(lambda: _problems(job, data), outcome.problems)
            if outcome.problems
            else {}
        )
        owned = job.end(
            UploadJob.Status.FAILED if refused else UploadJob.Status.DONE,
            progress=100,
            step="",
            figures={} if refused else outcome.figures(),
            **problems,
        )
        return job
    except Exception:
        # A fault of ours, not of the file: the transaction stored nothing; say so and re-raise.
        failed = gettext_noop("the upload failed on the server; nothing imported")
        owned = job.end(
            UploadJob.Status.FAILED,
            step="",
            **_problem_fields(lambda: [f"{job.file_name}: " + gettext(failed)]),
        )
        raise
    finally:
        if owned:
            path.unlink(missing_ok=True)
            if job.file_path:
                _set(job, file_path="")


def _problems(job: UploadJob, data: bytes) -> list[str]:
    """The file's problems in the active language: the reading's and those against what is
    stored (as `ingest.uploads.store` finds them)."""
    reading = read_issue_file(job.file_name, data, job.kind)
    return reading.problems + plan(reading, _target(job)).problems


def _problem_fields(
    problems: Callable[[], list[str]], known: list[str] | None = None
) -> dict[str, Any]:
    """The problems as `problems()` says them in each language of the site, and in the job's
    own (`known` when already found in it): the fields of the job's end."""
    language = translation.get_language() or settings.LANGUAGE_CODE
    own = known if known is not None else problems()
    by_language = {language: own}
    for code, _name in settings.LANGUAGES:
        if code not in by_language:
            with translation.override(code):
                by_language[code] = problems()
    return {"problems": own, "problems_by_language": by_language}


def _target(job: UploadJob) -> Target:
    """The uploader's rights go with the job (`ingest.uploads`): a job without a user is the
    operator's `manage.py upload_issues`."""
    return Target(project=job.project, user=job.requested_by, source=job.source)


def _import(job: UploadJob, reading: Reading) -> Outcome:
    """Store the file and add its issues to the project, in one transaction."""
    with transaction.atomic():
        outcome = store(reading, _target(job))
        jobclaim.step_pause()  # 0 but in tests/faults/test_worker_kill.py
        if outcome.problems:
            return outcome
        if job.add_to_queue:
            outcome.added_to_queue = add_to_queue(
                job.project, outcome.issue_ids, outcome.repository_ids
            )
        to_fetch = outcome.to_fetch if job.fetch else []
        if to_fetch:
            outbox.enqueue(HYDRATE_TASK, [to_fetch])
        outcome.queued_for_fetching = len(to_fetch)
    return outcome


def add_to_queue(project: Project, issue_ids: list[int], repository_ids: list[int]) -> int:
    """Put the issues at the end of the project's queue (in file order), and their
    repositories in its scope; issues already in the project stay where they are."""
    for repository in Repository.objects.filter(pk__in=repository_ids):
        attach(project, repository)
    present = set(
        ProjectIssue.objects.filter(project=project, issue_id__in=issue_ids).values_list(
            "issue_id", flat=True
        )
    )
    start = (
        ProjectIssue.objects.filter(project=project).aggregate(m=Max("position"))["m"] or 0
    ) + 1
    new = [i for i in issue_ids if i not in present]
    sql.copy_rows(
        ProjectIssue,
        ("project_id", "issue_id", "position"),
        ((project.pk, issue_id, start + n) for n, issue_id in enumerate(new)),
    )
    return len(new)


# -- asking for an upload --------------------------------------------------------------------

# The upload's task is named by its Celery name (`UploadJob.TASK`): dataset.tasks calls this
# module, never the reverse.


def start_upload(
    project: Project,
    user: User,
    upload: UploadedFile,
    *,
    kind: str = "",
    source: str,
    dry_run: bool,
    add_to_queue: bool = True,
    fetch: bool = False,
) -> UploadJob:
    """Keep the file under UPLOAD_ROOT, record the job and queue its task on commit."""
    name = (upload.name or "upload")[:200]
    upload.seek(0)
    data = upload.read()
    if not kind:
        kind = guess_kind(name, data[:64].decode("utf-8", "replace"))
    # The problems are read on the page in the uploader's language: the task writes them in it.
    language = translation.get_language()
    with transaction.atomic():
        job = keep_file(project, user, name, data, kind, source, dry_run, add_to_queue, fetch)
        outbox.enqueue(job.TASK, job.task_args(language))
    return job
