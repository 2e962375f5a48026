"""`manage.py enlist_rater --project NAME --rater RATER (--confidence-threshold T | --withdraw)`:
enlist a machine rater in the adaptive stopping rule from a confidence on, or take it back (the
page's form and `raters.enlisting.enlist`: a rater without a current validation is refused)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lib.refusal import Refusal, command_error
from raters.enlisting import current_validation, enlist, rule_ignores
from raters.forms import EnlistForm
from raters.management.lookup import project_and_rater


class Command(BaseCommand):
    help = "Enlist a machine rater in the adaptive stopping rule, or take it back."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="the project's name")
        parser.add_argument("--rater", required=True, help="the rater's name")
        parser.add_argument(
            "--confidence-threshold",
            default="",
            help="its label counts as one vote from this confidence on (0 to 1)",
        )
        parser.add_argument("--withdraw", action="store_true", help="take the rater back")

    def handle(self, *args: Any, **options: Any) -> None:
        project, rater = project_and_rater(options)
        form = EnlistForm(
            {
                "enlisted": not options["withdraw"],
                "confidence_threshold": options["confidence_threshold"],
            }
        )
        if not form.is_valid():
            field, errors = next(iter(form.errors.items()))
            raise CommandError(f"{field.replace('_', '-')}: {' '.join(str(e) for e in errors)}")
        try:
            enlist(rater, form.cleaned_data["enlisted"], form.cleaned_data["confidence_threshold"])
        except Refusal as exc:
            raise command_error(exc, dashes=True) from exc
        if not rater.enlisted:
            self.stdout.write(f"{rater.name} is not enlisted")
            return
        figures = current_validation(rater)
        assert figures is not None  # enlist refuses a rater without one
        kappa = figures["kappa_theme"]
        self.stdout.write(
            f"{rater.name} is enlisted from confidence {rater.confidence_threshold} "
            f"(current version on {figures['n']} final issues: kappa theme "
            f"{'-' if kappa is None else f'{kappa:.3f}'})"
        )
        if rule_ignores(project):
            self.stdout.write(
                f"note: {project.name}'s stopping rule is fixed: enlisting has no effect until "
                "it is adaptive"
            )
