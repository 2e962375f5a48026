"""`manage.py backup DEST [--keep N] [--pg-bin DIR]`: a consistent PostgreSQL dump and the
data directory's exports and releases, with a manifest of checksums, in one new directory
`DEST/annotator-backup-<UTC time>/` (`config.backup`; the procedure: docs/OPERATIONS.md).
`--keep N` then deletes all but the newest N whole backups in DEST."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from config.backup import BackupError, create_backup, prune_backups


class Command(BaseCommand):
    help = "Back up the database (pg_dump) and DATA_DIR's exports and releases, with checksums."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("destination", help="directory that receives the backup directory")
        parser.add_argument(
            "--keep", type=int, help="afterwards, keep only the newest N backups in destination"
        )
        parser.add_argument(
            "--pg-bin", help="directory of pg_dump (default: the server's version, or PATH)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        def report(line: str) -> None:
            if options["verbosity"] > 0:
                self.stderr.write(line)

        destination = Path(options["destination"])
        try:
            if options["keep"] is not None and options["keep"] < 1:
                raise BackupError("keep: must be at least 1")
            path = create_backup(destination, options["pg_bin"], report)
            if options["keep"] is not None:
                prune_backups(destination, options["keep"], report)
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        # stdout is the path alone, for scripts (`path=$(manage.py backup /backups)`).
        self.stdout.write(str(path))
