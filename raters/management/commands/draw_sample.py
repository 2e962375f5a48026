"""`manage.py draw_sample --project NAME --rater RATER --size N --seed S [--uniform-share T]
[--json]`: draw the project's human sample actively (inclusion probabilities from the rater's
uncertainty, recorded per issue), and put the drawn issues first in the unserved part of the
queue (`raters.sampling.draw_sample`). The estimates then use this sample."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from agreement.active import UNIFORM_SHARE
from lib.refusal import Refusal, command_error
from raters.management.lookup import project_and_rater
from raters.sampling import draw_sample


class Command(BaseCommand):
    help = "Draw an active human sample from a machine rater's uncertainty."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="the project's name")
        parser.add_argument("--rater", required=True, help="the machine rater's name")
        parser.add_argument("--size", type=int, required=True, help="the expected sample size")
        parser.add_argument("--seed", type=int, required=True, help="the draw's seed (recorded)")
        parser.add_argument(
            "--uniform-share",
            type=float,
            default=UNIFORM_SHARE,
            help=f"share of the budget spread uniformly (default {UNIFORM_SHARE})",
        )
        parser.add_argument("--json", action="store_true", help="print the draw as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        project, rater = project_and_rater(options)
        try:
            draw = draw_sample(
                project, rater, options["size"], options["seed"], options["uniform_share"]
            )
        except Refusal as error:
            raise command_error(error) from error
        probabilities = list(draw.inclusions.values_list("probability", flat=True))
        report = {
            "project": project.name,
            "rater": rater.name,
            "rater_version": draw.rater_version,
            "budget": draw.budget,
            "seed": draw.seed,
            "uniform_share": draw.uniform_share,
            "in_scope": len(probabilities),
            "drawn": draw.drawn,
            "probability_min": min(probabilities),
            "probability_max": max(probabilities),
        }
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
            return
        self.stdout.write(
            f"drew {draw.drawn} of {len(probabilities)} issues (budget {draw.budget}, seed "
            f"{draw.seed}, rater {rater.name} v{draw.rater_version}); inclusion probabilities "
            f"{min(probabilities):.4f} to {max(probabilities):.4f}; the drawn issues are first "
            "in the unserved part of the queue"
        )
