"""`manage.py agreement --project NAME [--json]`: the project's agreement report."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agreement.measures import LEVEL_NAMES, agreement_report
from annotator.models import Project


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.6f}"


class Command(BaseCommand):
    help = "Fleiss' kappa per type of final label (and Krippendorff's alpha, Cohen per pair)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True)
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument("--no-cache", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            raise CommandError(f"no project named {options['project']!r}")
        report = agreement_report(project, use_cache=not options["no_cache"])
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2, ensure_ascii=False))
            return
        self.stdout.write(
            f"{report['project']}: {report['issues']} issues, {report['annotations']} annotations"
        )
        for group in report["groups"]:
            for level, stats in group["levels"].items():
                line = (
                    f"{group['name']:<16} {LEVEL_NAMES[level]:<10} issues {stats['issues']:>6}  "
                    f"kappa {_fmt(stats['kappa'])}  alpha {_fmt(stats['alpha'])}  "
                    f"({stats['reading']})"
                )
                if stats.get("note"):
                    line += f"  note: {stats['note']}"
                if stats["excluded"]:
                    line += f"  left out {stats['excluded']}: {stats['excluded_reason']}"
                self.stdout.write(line)
