"""`manage.py machine_label --project NAME --rater RATER [--wait] [--only final|open|all]
[--resume]`: run a machine rater over the project's issues. Without --wait the run is queued
for a worker; with it the run happens here and its outcome is printed. --resume goes on with
the rater's latest run that did not finish (failed, queued, or left `running` by a command or
worker that was killed: a stale run, `raters.liveness`), from the issues it has not labeled
yet; a run another live process is running is refused."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from lib.refusal import Refusal, command_error
from raters.management.lookup import project_and_rater
from raters.models import RaterRun
from raters.runs import begin_run, resumable_run, resume_run, run_rater, start_run


class Command(BaseCommand):
    help = "Label a project's issues with one of its machine raters."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="the project's name")
        parser.add_argument("--rater", required=True, help="the rater's name")
        parser.add_argument("--wait", action="store_true", help="run here and wait for it")
        parser.add_argument("--only", default="all", help="final, open or all (default)")
        parser.add_argument(
            "--resume", action="store_true", help="go on with the latest unfinished run"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        _, rater = project_and_rater(options)
        unfinished = None
        if options["resume"]:
            try:
                unfinished = resumable_run(rater)
            except Refusal as exc:
                raise command_error(exc) from exc
            if not options["wait"]:
                with transaction.atomic():
                    resume_run(unfinished)
                self.stdout.write(f"run {unfinished.pk} of {rater.name} queued to resume")
                return
        try:
            if unfinished is not None:
                run = run_rater(unfinished.pk)
            elif options["wait"]:
                run = run_rater(begin_run(rater, options["only"]).pk)
            else:
                with transaction.atomic():
                    run = start_run(rater, options["only"])
                self.stdout.write(f"run {run.pk} of {rater.name} queued")
                return
        except Refusal as exc:
            raise command_error(exc) from exc
        if run.status == RaterRun.Status.FAILED:
            raise CommandError(run.error_shown)
        tokens = (
            f", tokens {run.prompt_tokens} prompt + {run.completion_tokens} completion"
            if run.prompt_tokens or run.completion_tokens
            else ""
        )
        self.stdout.write(
            f"run {run.pk} of {rater.name}: {run.done} issues labeled, {run.invalid} invalid"
            f"{tokens}"
        )
