"""`manage.py raters --project NAME [--json]`: the machine raters' validation figures (the
page's and the API's)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.models import Project
from raters.validation import validation_report


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


class Command(BaseCommand):
    help = "Show how each machine rater agrees with the final labels (out of sample)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="the project's name")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            raise CommandError(f"project: no project named {options['project']!r}")
        report = validation_report(project)
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
            return
        if not report["raters"]:
            self.stdout.write("no machine rater")
        for row in report["raters"]:
            self.stdout.write(
                f"{row['name']} ({row['kind']}): n {row['n']}, kappa type "
                f"{_f(row['kappa_type'])}, kappa theme {_f(row['kappa_theme'])}, accuracy "
                f"{_f(row['accuracy_theme'])}, invalid {_f(row['invalid_rate'])}"
            )
            self.stdout.write(
                "  coverage: "
                + ", ".join(f">={t}: {c:.2f} at {_f(a)}" for t, c, a in row["coverage"])
            )
            self.stdout.write(
                f"  calibration: expected calibration error {_f(row['ece'])} (10 bins); "
                + ", ".join(
                    f"({low}, {high}]: n {n}, confidence {_f(mean)}, accuracy {_f(accuracy)}"
                    for low, high, n, mean, accuracy in row["reliability"]
                    if n
                )
            )
        human = report["human"]
        self.stdout.write(
            f"human annotators, kappa theme: median {_f(human['kappa_theme_median'])}, "
            f"min {_f(human['kappa_theme_min'])}, max {_f(human['kappa_theme_max'])}"
        )
        for a, b, value in report["model_model"]:
            self.stdout.write(f"{a} - {b}: kappa theme {_f(value)}")
