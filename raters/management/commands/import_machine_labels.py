"""`manage.py import_machine_labels --project NAME --rater RATER [--model M] FILE`: a file of
`Issue_URL,label,confidence` becomes the current labels of an external rater, as a new version
(`raters.imports`, the page's function). Every bad row is named by its line; on any, nothing is
stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.models import Project
from raters.imports import LabelFileError, import_machine_labels


class Command(BaseCommand):
    help = "Import machine labels made elsewhere (Issue_URL,label,confidence) as an external rater."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="the project's name")
        parser.add_argument("--rater", required=True, help="the external rater's name")
        parser.add_argument("--model", default="", help="the model that made the labels")
        parser.add_argument("file", help="a CSV file with the columns Issue_URL,label,confidence")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            raise CommandError(f"project: no project named {options['project']!r}")
        path = Path(options["file"])
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CommandError(f"{path}: cannot read ({exc.strerror})") from exc
        try:
            result = import_machine_labels(
                project, options["rater"], path.name, data, model=options["model"]
            )
        except LabelFileError as error:
            raise CommandError(
                f"nothing imported; {len(error.problems)} problem(s):\n"
                + "\n".join(f"  {p}" for p in error.problems)
            ) from error
        self.stdout.write(
            f"{result.labels} labels imported as version {result.version} of "
            f"{result.rater.name} (replacing {result.replaced}); sha256 {result.sha256}"
        )
