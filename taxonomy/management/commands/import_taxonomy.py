"""Store a taxonomy JSON file as a new version (all or nothing)."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lib.inputlimits import column_limit, length_error
from taxonomy.files import TaxonomyJSONError, import_json
from taxonomy.models import Taxonomy, TaxonomyVersion


class Command(BaseCommand):
    help = "Import a taxonomy JSON file as the next version of the taxonomy it names."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path")
        parser.add_argument("--name", help="store under this taxonomy name instead")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["path"])
        name = options["name"]
        if name is not None:
            problem = (
                "must not be empty" if not name.strip() else length_error(Taxonomy, "name", name)
            )
            if problem:
                raise CommandError(f"--name: {problem}")
        # The source column is of limited length; a very long path keeps its end (the file name).
        source = str(path)[-column_limit(TaxonomyVersion, "source") :]
        try:
            version = import_json(path.read_bytes(), taxonomy_name=name, source=source)
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror}") from exc
        except TaxonomyJSONError as exc:
            raise CommandError(f"{path}: {exc}") from exc
        self.stdout.write(self.style.SUCCESS(f"{version}: {version.nodes.count()} nodes"))
