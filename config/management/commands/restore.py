"""`manage.py restore BACKUP [--force] [--verify-only] [--pg-bin DIR]`: check every file of a
backup against its manifest, then restore its dump into the configured (empty) database and
its files into DATA_DIR (`config.backup`; the drill: docs/OPERATIONS.md). `--verify-only`
checks the checksums and touches nothing; `--force` replaces a database that is not empty and
files that differ."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from config.backup import BackupError, describe, restore_backup, verify_backup


class Command(BaseCommand):
    help = "Restore a backup made by `manage.py backup` into an empty database and DATA_DIR."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("backup", help="a backup directory (annotator-backup-…)")
        parser.add_argument(
            "--force",
            action="store_true",
            help="replace the database's public schema and differing files",
        )
        parser.add_argument(
            "--verify-only", action="store_true", help="check the checksums; restore nothing"
        )
        parser.add_argument(
            "--pg-bin", help="directory of pg_restore (default: the server's version, or PATH)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        def report(line: str) -> None:
            if options["verbosity"] > 0:
                self.stderr.write(line)

        backup = Path(options["backup"])
        try:
            if options["verify_only"]:
                manifest = verify_backup(backup)
                for line in describe(manifest):
                    self.stdout.write(line)
                self.stdout.write(f"{backup}: every file matches its manifest")
                return
            restored = restore_backup(backup, options["force"], options["pg_bin"], report)
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"restored {restored.backup} into database {restored.database} "
            f"and {restored.files} file(s)"
        )
        if restored.pending:
            self.stdout.write(
                f"{len(restored.pending)} migration(s) of this code are not applied yet "
                f"({', '.join(restored.pending)}): run `manage.py migrate` before serving"
            )
