"""`manage.py load_taxonomy [DIR]`: the study's detail CSVs as a new version, with its counts."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from taxonomy.loader import DEFAULT_DIR, STUDY_TAXONOMY_NAME, TaxonomyFileError, load_study_taxonomy
from taxonomy.models import TaxonomyNode
from taxonomy.search import build_tree


class Command(BaseCommand):
    help = "Load the study's taxonomy detail CSVs (question/requirement/bug) as a new version."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "directory",
            nargs="?",
            default=str(DEFAULT_DIR),
            help="folder holding the three CSVs (default: the shipped copy)",
        )
        parser.add_argument("--name", default=STUDY_TAXONOMY_NAME, help="taxonomy name")
        parser.add_argument(
            "--if-missing",
            action="store_true",
            help="do nothing when a version of this taxonomy exists",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            version = load_study_taxonomy(
                Path(options["directory"]), options["name"], only_if_missing=options["if_missing"]
            )
        except TaxonomyFileError as exc:
            raise CommandError(str(exc)) from exc
        counts = {
            level.label: version.nodes.filter(level=level).count() for level in TaxonomyNode.Level
        }
        summary = ", ".join(f"{n} {label}s" for label, n in counts.items())
        # Details as the loader splits them (docs/DATASET.md, "Taxonomy detail files").
        details = ", ".join(f"{t.node.name} {t.detail_count:,}" for t in build_tree(version))
        self.stdout.write(self.style.SUCCESS(f"{version}: {summary}; details: {details}"))
