"""Write a taxonomy version as JSON (the file the versions page offers), or as detail CSVs.

`--csv DIR` writes one detail file per issue type in the study's shape (question_intents.csv,
requirement_expections.csv, bug_symptoms.csv for the study's types), which `load_taxonomy DIR`
reads back: the study's own files come back as they went in.
"""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from taxonomy.detail_files import export_version_csv, study_file_name
from taxonomy.files import export_json
from taxonomy.models import TaxonomyVersion


class Command(BaseCommand):
    help = "Export a taxonomy version (by id) as JSON to stdout or a file, or as detail CSVs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("version_id", type=int)
        parser.add_argument("--output", "-o", help="file to write (default: stdout)")
        parser.add_argument(
            "--csv", metavar="DIR", help="write the detail CSV of each issue type into DIR"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        version = TaxonomyVersion.objects.filter(pk=options["version_id"]).first()
        if version is None:
            raise CommandError(f"no taxonomy version with id {options['version_id']}")
        if options["csv"]:
            self.write_csv(version, Path(options["csv"]))
            return
        text = export_json(version)
        if options["output"]:
            with open(options["output"], "w", encoding="utf-8") as fh:
                fh.write(text)
        else:
            self.stdout.write(text, ending="")

    def write_csv(self, version: TaxonomyVersion, directory: Path) -> None:
        if not directory.is_dir():
            raise CommandError(f"{directory}: not a directory")
        for issue_type in version.types().order_by("position"):
            path = directory / study_file_name(issue_type.code)
            try:
                # newline="": the text already holds its line ends.
                with open(path, "w", encoding="utf-8", newline="") as fh:
                    fh.write(export_version_csv(version, issue_type.code))
            except OSError as exc:
                raise CommandError(f"{path}: {exc.strerror}") from exc
            self.stdout.write(f"{path}")
