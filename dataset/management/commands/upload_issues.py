"""`manage.py upload_issues PROJECT_ID FILE [--dry-run]`: what the upload page does, in process.

The same job and function as the page's Celery task (`dataset.uploads.run_upload_job`): the
file is read, checked and (unless a dry run) stored in one transaction, its issues added to the
project's queue; with any problem nothing is stored and every problem is named by line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.models import Project
from dataset.models import UploadJob
from dataset.uploads import keep_file, run_upload_job
from ingest.issue_files import KINDS, guess_kind
from ingest.uploads import DEFAULT_SOURCE, source_problem
from lib.inputlimits import upload_too_large


class Command(BaseCommand):
    help = "Upload a CSV, JSON Lines or URL-list file of issues into a project (see the README)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project_id", type=int)
        parser.add_argument("file", type=Path)
        parser.add_argument("--kind", choices=sorted(KINDS), help="Default: from the file.")
        parser.add_argument(
            "--source", default=DEFAULT_SOURCE, help="Repository of non-forge URLs."
        )
        parser.add_argument("--dry-run", action="store_true", help="Check only; store nothing.")
        parser.add_argument("--no-queue", action="store_true", help="Do not add to the queue.")
        parser.add_argument("--fetch", action="store_true", help="Fetch URL-list issues.")

    def handle(self, *args: Any, **opts: Any) -> None:
        project = Project.objects.filter(pk=opts["project_id"]).first()
        if project is None:
            raise CommandError(f"project {opts['project_id']}: no such project")
        path: Path = opts["file"]
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CommandError(f"{path}: cannot read: {exc.strerror}") from None
        too_large = upload_too_large(len(data))
        if too_large:
            raise CommandError(f"{path}: too large: {too_large}")
        problem = source_problem(opts["source"])
        if problem:
            raise CommandError(f"--source: {problem}")
        kind = opts["kind"] or guess_kind(path.name, data[:64].decode("utf-8", "replace"))
        job = keep_file(
            project, None, path.name, data, kind, opts["source"], opts["dry_run"],
            not opts["no_queue"], opts["fetch"],
        )  # fmt: skip
        done = run_upload_job(job.pk)
        assert done is not None
        for _name, label, value in done.labeled_figures():
            self.stdout.write(f"{label}: {value}")
        for line in done.problems:
            self.stderr.write(line)
        if done.status == UploadJob.Status.FAILED:
            raise CommandError(f"{len(done.problems)} problem(s); nothing imported")
