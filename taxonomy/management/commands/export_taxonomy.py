"""Write a taxonomy version as JSON (the same file the versions page offers)."""

from django.core.management.base import BaseCommand, CommandError

from taxonomy.files import export_json
from taxonomy.models import TaxonomyVersion


class Command(BaseCommand):
    help = "Export a taxonomy version (by id) as JSON to stdout or a file."

    def add_arguments(self, parser):
        parser.add_argument("version_id", type=int)
        parser.add_argument("--output", "-o", help="file to write (default: stdout)")

    def handle(self, *args, **options):
        version = TaxonomyVersion.objects.filter(pk=options["version_id"]).first()
        if version is None:
            raise CommandError(f"no taxonomy version with id {options['version_id']}")
        text = export_json(version)
        if options["output"]:
            with open(options["output"], "w", encoding="utf-8") as fh:
                fh.write(text)
        else:
            self.stdout.write(text, ending="")
