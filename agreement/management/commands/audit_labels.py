"""`manage.py audit_labels --project NAME [--top N] [--json]`: finals a Dawid-Skene model doubts.

The same function as the lead's audit page (`agreement.audit.audit`): final labels ranked by
their posterior under the model, least likely first, and each annotator's model accuracy.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agreement.audit import ACCURACY_DEFINITION, audit
from annotator.models import Project


def _top(value: str) -> int:
    from argparse import ArgumentTypeError

    if not value.isdigit():
        raise ArgumentTypeError("--top: a whole number, 0 for every final label")
    return int(value)


class Command(BaseCommand):
    help = "Rank final labels by how unlikely a Dawid-Skene model of the annotators finds them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True)
        parser.add_argument(
            "--top", type=_top, default=50, help="rows to list (default 50; 0: all)"
        )
        parser.add_argument("--json", action="store_true", help="print the audit as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            raise CommandError(f"--project: no project named {options['project']!r}")
        result = audit(project, top=options["top"] or None)
        if options["json"]:
            self.stdout.write(json.dumps(result.as_json(), indent=2, ensure_ascii=False))
            return
        self.stdout.write(
            f"{result.project}: {result.issues_fitted} issues fitted, {result.finals} final "
            f"labels audited, {result.classes} themes, EM {result.iterations} iterations"
            + ("" if result.converged else " (not converged)")
        )
        self.stdout.write(
            f"{'final':<8}{'posterior':>10}  {'suggested':<10}{'posterior':>10}  {'votes':<28}url"
        )
        for row in result.issues:
            votes = " ".join(f"{code}x{count}" for code, count in row.votes)
            self.stdout.write(
                f"{row.final:<8}{row.final_posterior:>10.4f}  {row.suggested:<10}"
                f"{row.suggested_posterior:>10.4f}  {votes:<28}{row.url}"
            )
        self.stdout.write(f"\nAnnotator accuracy ({ACCURACY_DEFINITION}):")
        for rater in result.annotators:
            self.stdout.write(
                f"{rater.pseudonym:<20}{rater.accuracy:>8.4f}  {rater.labels:>7} labels"
            )
