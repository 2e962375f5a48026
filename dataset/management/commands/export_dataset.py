"""`manage.py export_dataset --project NAME OUT.zip`: every export format in one ZIP."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotator.models import Project
from dataset.exports import build_zip


class Command(BaseCommand):
    help = "Write the study CSVs, JSON Lines, taxonomy details, Table I and agreement to a ZIP."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--project", required=True)
        parser.add_argument("output")
        parser.add_argument("--real-names", action="store_true", help="usernames, not pseudonyms")

    def handle(self, *args, **options) -> None:
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            raise CommandError(f"no project named {options['project']!r}")
        manifest = build_zip(project, Path(options["output"]), options["real_names"])
        for entry in manifest["files"]:
            self.stdout.write(f"{entry['sha256']}  {entry['bytes']:>10}  {entry['name']}")
