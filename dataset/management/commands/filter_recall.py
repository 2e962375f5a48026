"""`manage.py filter_recall --project NAME [--sample N | --margin E] [--seed S] [--json]`: draw
recall probes from the issues the keyword filter dropped (as the recall page does) and print the
report; without --sample or --margin it only prints the report."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.models import Project
from dataset.recall import draw_probes, recall_report
from dataset.recall import format_interval as _interval
from lib.refusal import Refusal, command_error


class Command(BaseCommand):
    help = "Draw a sample of the keyword filter's dropped issues as recall probes; print recall."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="the project's name")
        size = parser.add_mutually_exclusive_group()
        size.add_argument("--sample", type=int, help="how many dropped issues to draw")
        size.add_argument("--margin", type=float, help="or: the margin of error wanted (0.05)")
        parser.add_argument("--seed", type=int, help="seed of the draw (default: random)")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            raise CommandError(f"project: no project named {options['project']!r}")
        if options["sample"] is not None or options["margin"] is not None:
            try:
                draw = draw_probes(
                    project,
                    sample_size=options["sample"],
                    margin=options["margin"],
                    seed=options["seed"],
                )
            except Refusal as exc:
                raise command_error(exc, {"sample_size": "sample"}) from exc
            if not options["json"]:
                self.stdout.write(
                    f"draw {draw.number}: {draw.size} probes (seed {draw.seed}) "
                    + ", ".join(f"{repo} {n}" for repo, n in draw.by_repository.items())
                )
        elif options["seed"] is not None:
            raise CommandError("seed: a seed needs --sample or --margin")
        report = recall_report(project)
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2, default=str))
            return
        self.stdout.write(
            f"{report['dropped_total']} dropped issues in scope, {report['sample_size']} drawn, "
            f"{report['labeled']} final, {report['llm_related']} relevant"
        )
        self.stdout.write(
            "share of relevant among dropped (stratified by repository): "
            + _interval(report["share"])
        )
        if report["unknown_strata"]:
            self.stdout.write(
                "no final probe yet (counted as 0-100 % relevant): "
                + ", ".join(report["unknown_strata"])
            )
        self.stdout.write(f"recall of the filter: {_interval(report['recall'])}")
        for row in report["by_repository"]:
            self.stdout.write(
                f"  {row['repository']}: dropped {row['dropped']}, probes {row['sample_size']}, "
                f"final {row['labeled']}, relevant {row['llm_related']}, "
                f"share {_interval(row['share'])}, recall {_interval(row['recall'])}"
            )
        if report["suggested_keywords"]:
            self.stdout.write("suggested keywords: " + ", ".join(report["suggested_keywords"]))
