"""`manage.py export_dataset --project NAME OUT.zip [--everything] [--count issues|rows]`: every
format in one ZIP.

Final issues only unless `--everything` (every issue, with a Status column in the study CSVs).
`--count rows` makes table_one.csv count the published label files' rows, as the paper does (an
issue repeated in them counts once per row); the default `issues` counts each issue once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agreement.table_one import COUNT_ISSUES, COUNTS
from annotator.models import Project
from dataset.exports import build_zip


class Command(BaseCommand):
    help = "Write the study CSVs, JSON Lines, taxonomy details, Table I and agreement to a ZIP."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True)
        parser.add_argument("output")
        parser.add_argument("--real-names", action="store_true", help="usernames, not pseudonyms")
        parser.add_argument(
            "--everything",
            action="store_true",
            help="every issue with its status, not only final ones",
        )
        parser.add_argument(
            "--count",
            choices=COUNTS,
            default=COUNT_ISSUES,
            help="Table I counts issues (default) or the published files' rows, as the paper",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            raise CommandError(f"no project named {options['project']!r}")
        manifest = build_zip(
            project,
            Path(options["output"]),
            options["real_names"],
            everything=options["everything"],
            count=options["count"],
        )
        for entry in manifest["files"]:
            self.stdout.write(f"{entry['sha256']}  {entry['bytes']:>10}  {entry['name']}")
        unmapped = manifest["labels_without_counterpart"]
        if unmapped:
            self.stderr.write(
                f"{len(unmapped)} label(s) have no counterpart in {manifest['taxonomy_version']}"
                " and keep their original code (see manifest.json)"
            )
