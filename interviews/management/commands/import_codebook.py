"""Import an interview codebook CSV into a project (all or nothing)."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.models import Project
from interviews.codebook import CodebookError, import_csv


class Command(BaseCommand):
    help = "Import a codebook CSV (Participant,Type,Experience Level,…) into a project."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project_id", type=int)
        parser.add_argument("path")
        parser.add_argument("--replace", action="store_true", help="replace the codebook")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(pk=options["project_id"]).first()
        if project is None:
            raise CommandError(f"no project with id {options['project_id']}")
        path = Path(options["path"])
        try:
            n = import_csv(
                project, path.read_text(encoding="utf-8-sig"), replace=options["replace"]
            )
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{path}: {exc}") from exc
        except CodebookError as exc:
            raise CommandError(f"{path}, {exc}") from exc
        self.stdout.write(self.style.SUCCESS(f"Imported {n} codebook entries into {project}."))
