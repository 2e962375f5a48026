"""`manage.py date_last_labels [--since TIME]`: set each labeled queue item's `last_label_at`
from its current labels again.

For the upgrade to labeling migration 0007 (docs/OPERATIONS.md, "Upgrading"): while a web host
still runs the previous release, the labels it stores leave the item's time behind (that code
does not know the column). Run this once every host runs the new code; `--since` (the time the
migration ran) limits it to the items labeled since.
"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Exists, OuterRef
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from labeling.models import Annotation, ProjectIssue
from labeling.submission import refresh_last_label


class Command(BaseCommand):
    help = "Set each labeled issue's last label time from its current labels again."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--since",
            help="only issues with a label stored at or after this time (ISO 8601, e.g."
            " 2026-11-28T02:00:00Z)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        labels = Annotation.objects.filter(
            project_id=OuterRef("project_id"), issue_id=OuterRef("issue_id"), is_current=True
        )
        if options["since"]:
            try:
                since = parse_datetime(options["since"])
            except ValueError:  # well formed, but no such time (a 13th month)
                since = None
            if since is None:
                raise CommandError(f"--since: not a date and time: {options['since']!r}")
            if timezone.is_naive(since):
                since = timezone.make_aware(since)
            labels = labels.filter(created_at__gte=since)
        items = list(
            ProjectIssue.objects.filter(Exists(labels)).order_by("pk").values_list("pk", flat=True)
        )
        refresh_last_label(items)
        self.stdout.write(f"Dated the last label of {len(items)} issues.")
