"""`manage.py import_labels --project NAME FILE...`: load labels published in the study's format."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dataset.importer import LabelImportError, import_labels


class Command(BaseCommand):
    help = "Import Issue_URL,Label1..LabelN,Final_Label CSV files into a project (atomic)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="project name (created if missing)")
        parser.add_argument("files", nargs="+", metavar="FILE")
        parser.add_argument(
            "--skip-invalid",
            action="store_true",
            help="import the valid rows and list what was skipped, instead of importing nothing",
        )
        parser.add_argument("--quiet", action="store_true", help="no progress output")

    def handle(self, *args: Any, **options: Any) -> None:
        show = not options["quiet"] and sys.stderr.isatty()
        last: dict[str, int] = {}

        def progress(stage: str, done: int, total: int) -> None:
            # Printed only every 10 %, so a 300,000-row import stays readable.
            percent = 100 * done // total if total else 100
            if options["quiet"] or last.get(stage, -10) + 10 > percent:
                return
            last[stage] = percent
            end = "\n" if percent >= 100 or not show else "\r"
            self.stderr.write(f"{stage}: {done:,}/{total:,} ({percent}%)", ending=end)

        try:
            report = import_labels(
                options["project"],
                options["files"],
                skip_invalid=options["skip_invalid"],
                progress=progress,
            )
        except LabelImportError as exc:
            for line in exc.report.lines():
                self.stderr.write(line)
            raise CommandError(
                f"{len(exc.report.problems)} problem(s); nothing imported "
                "(fix the files or use --skip-invalid)"
            ) from None
        for line in report.lines():
            self.stdout.write(line)
