"""Store a taxonomy JSON file as a new version (all or nothing)."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from taxonomy.files import TaxonomyJSONError, import_json


class Command(BaseCommand):
    help = "Import a taxonomy JSON file as the next version of the taxonomy it names."

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--name", help="store under this taxonomy name instead")

    def handle(self, *args, **options):
        path = Path(options["path"])
        try:
            version = import_json(
                path.read_bytes(), taxonomy_name=options["name"], source=str(path)
            )
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror}") from exc
        except TaxonomyJSONError as exc:
            raise CommandError(f"{path}: {exc}") from exc
        self.stdout.write(self.style.SUCCESS(f"{version}: {version.nodes.count()} nodes"))
