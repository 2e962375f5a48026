from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.demo import DEMO_ACCOUNTS, ensure_admin, load_demo


class Command(BaseCommand):
    help = "Create an admin account and the demo project (invented issues, demo accounts)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-admin", action="store_true", help="skip the admin account")
        parser.add_argument(
            "--no-history",
            action="store_true",
            help="no labels given yet (by default two volunteers have labeled the first issues)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            self._load(options)
        except ValidationError as exc:  # e.g. an account whose name looks like a demo account's
            raise CommandError("; ".join(exc.messages)) from exc

    def _load(self, options: dict[str, Any]) -> None:
        if not options["no_admin"]:
            admin, password_file = ensure_admin()
            if password_file:
                self.stdout.write(
                    f"Created superuser '{admin.username}'; its password is in {password_file}"
                )
            else:
                self.stdout.write(f"Superuser '{admin.username}' exists already.")
        result = load_demo(history=not options["no_history"])
        verb = "Created" if result.created else "Found"
        self.stdout.write(
            self.style.SUCCESS(
                f"{verb} demo project '{result.project.name}' with "
                f"{result.project.project_issues.count()} issues."
            )
        )
        accounts = ", ".join(f"{name} ({role})" for name, role in DEMO_ACCOUNTS)
        self.stdout.write(f"Demo accounts: {accounts}; their password is in {result.password_file}")
