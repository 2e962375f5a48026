"""`manage.py import_issue_urls FILE...`: the study's URL lists into repositories and issues."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from ingest.urllists import import_refs, parse_files


class Command(BaseCommand):
    help = "Import issue URL lists (one URL per line) and queue the issues' hydration."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument(
            "--skip-bad", action="store_true", help="Import the good lines despite bad ones."
        )
        parser.add_argument(
            "--no-fetch", action="store_true", help="Do not queue fetching from the forge."
        )

    def handle(self, *args, files: list[Path], skip_bad: bool, no_fetch: bool, **opts) -> None:
        result = parse_files(files)
        for error in result.errors:
            self.stderr.write(error)
        if result.errors and not skip_bad:
            raise CommandError(
                f"{len(result.errors)} bad line(s); nothing imported (use --skip-bad to import "
                "the rest)"
            )
        import_refs(result)
        if result.issue_ids and not no_fetch:
            from ingest.tasks import hydrate_issues

            ids = result.issue_ids
            transaction.on_commit(lambda: hydrate_issues.delay(ids))
        self.stdout.write(
            f"{len(result.refs)} issue URLs ({result.duplicates} repeated), "
            f"{result.created_issues} new issues, {result.created_repositories} new "
            f"repositories, {len(result.errors)} bad lines; "
            f"{0 if no_fetch else len(result.issue_ids)} queued for fetching"
        )
