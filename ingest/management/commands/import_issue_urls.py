"""`manage.py import_issue_urls FILE... [--year YYYY]`: the study's URL lists into issues.

A file named `<repo>_<YYYY>.txt` gives its issues that study year (Table I counts them by it
until the forge's creation date is fetched); `--year` gives one year to every file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator import outbox
from ingest.hydration import HYDRATE_TASK
from ingest.urllists import check_year, import_refs, parse_files


class Command(BaseCommand):
    help = (
        "Import issue URL lists (one URL per line) and queue the issues' hydration. A file "
        "named <repo>_<YYYY>.txt records YYYY as its issues' study year."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument(
            "--year",
            type=int,
            help="Study year of every listed issue (instead of the year in the file names).",
        )
        parser.add_argument(
            "--skip-bad", action="store_true", help="Import the good lines despite bad ones."
        )
        parser.add_argument(
            "--no-fetch", action="store_true", help="Do not queue fetching from the forge."
        )

    def handle(
        self,
        *args: Any,
        files: list[Path],
        year: int | None,
        skip_bad: bool,
        no_fetch: bool,
        **opts: Any,
    ) -> None:
        if year is not None:
            try:
                check_year(year)
            except ValueError as exc:
                raise CommandError(f"--{exc}") from None
        result = parse_files(files, year=year)
        for error in result.errors:
            self.stderr.write(error)
        if result.errors and not skip_bad:
            raise CommandError(
                f"{len(result.errors)} bad line(s); nothing imported (use --skip-bad to import "
                "the rest)"
            )
        import_refs(result)
        if result.issue_ids and not no_fetch:
            outbox.enqueue(HYDRATE_TASK, [result.issue_ids])
        self.stdout.write(
            f"{len(result.refs)} issue URLs ({result.duplicates} repeated), "
            f"{result.created_issues} new issues, {result.created_repositories} new "
            f"repositories, {len(result.errors)} bad lines; "
            f"{len(result.years)} with a study year ({result.study_years_set} set or changed); "
            f"{0 if no_fetch else len(result.issue_ids)} queued for fetching"
        )
