"""`manage.py estimate --project NAME --rater RATER [--level type|theme] [--by repository|year]
[--replay-sample N --seed S] [--plan HALF_WIDTH] [--json]`: each code's share among the issues
in scope, by prediction-powered inference from the human sample and the rater's labels, beside
the human-only estimate (`raters.estimates`, the page's and the API's function). The human
sample is the project's active draw when it has one (`draw_sample`), else the queue prefix.

`--compare-sampling 100,200,400 [--draws 50] [--seed S]`: the simulator instead
(`raters.sampling.compare_on_project`): on the project's final issues, uniform against active
samples of each size, their mean interval widths and the human labels saved."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.models import Project
from labeling.models import MachineRater
from lib.refusal import Refusal, command_error
from raters.estimates import BY, LEVELS, estimate
from raters.management.lookup import project_and_rater
from raters.sampling import compare_on_project


def _or_beyond(value: float | None) -> str:
    return "beyond" if value is None else f"{value:.1f}"


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as error:
        raise CommandError(
            f"compare-sampling: whole numbers separated by commas, not {text!r}"
        ) from error
    if not sizes:
        raise CommandError("compare-sampling: at least one size")
    return sizes


def _pct(value: float) -> str:
    return f"{100 * value:5.1f}"


class Command(BaseCommand):
    help = "Estimate the shares of codes from the human sample with a machine rater's help."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="the project's name")
        parser.add_argument("--rater", required=True, help="the machine rater's name")
        parser.add_argument("--level", choices=LEVELS, default="type")
        parser.add_argument("--by", choices=BY, default=None)
        parser.add_argument(
            "--replay-sample",
            type=int,
            default=None,
            metavar="N",
            help="estimate as if only a uniform random N of the final issues were labeled",
        )
        parser.add_argument("--seed", type=int, default=0, help="the replayed sample's seed")
        parser.add_argument(
            "--plan",
            type=float,
            default=None,
            metavar="HALF_WIDTH",
            help="how many human labels make every interval at most this half-width (0.02)",
        )
        parser.add_argument(
            "--compare-sampling",
            default=None,
            metavar="SIZES",
            help="simulate uniform against active samples of these sizes (100,200,400)",
        )
        parser.add_argument(
            "--draws", type=int, default=50, help="samples of each kind per size (simulator)"
        )
        parser.add_argument("--json", action="store_true", help="print the estimates as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        project, rater = project_and_rater(options)
        if options["compare_sampling"] is not None:
            self._compare(project, rater, options)
            return
        try:
            result = estimate(
                project,
                rater,
                level=options["level"],
                by=options["by"],
                replay=options["replay_sample"],
                seed=options["seed"],
                plan_half_width=options["plan"],
            )
        except Refusal as error:
            raise command_error(error) from error
        report = result.as_json()
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
            return
        sample = report["sample"]
        if "active" in sample:
            active = sample["active"]
            self.stdout.write(
                f"active sample: {active['drawn']} drawn (budget {active['budget']}) from "
                f"{active['rater']} v{active['rater_version']}'s uncertainty, {active['pending']} "
                f"not in the sample yet; inclusion probabilities of the sample "
                f"{active['probability_min']:.4f} to {active['probability_max']:.4f}"
            )
        self.stdout.write(
            f"{report['n_human']} human-labeled of {report['n_total']} issues "
            f"({sample['rule']}; seed {sample['seed']}; {sample['held_back']} disputed issues "
            f"hold the sample back); rater {rater.name} v{rater.version}"
        )
        self.stdout.write(f"{'by':<24} {'code':<8} {'PPI % [95 % CI]':<26} human only % [95 % CI]")
        for row in report["estimates"]:
            self.stdout.write(
                f"{row['by'] or '':<24} {row['code']:<8} {_pct(row['share'])} "
                f"[{_pct(row['ci_low'])}, {_pct(row['ci_high'])}]   "
                f"{_pct(row['classical_share'])} [{_pct(row['classical_ci_low'])}, "
                f"{_pct(row['classical_ci_high'])}]" + ("  (sparse)" if row["sparse"] else "")
            )
        if "plan" in report:
            plan = report["plan"]
            self.stdout.write(
                f"every interval at most ±{plan['half_width']}: {plan['n_ppi']} human labels "
                f"with the rater, {plan['n_classical']} without (of {plan['n_total']})"
            )

    def _compare(self, project: Project, rater: MachineRater, options: dict[str, Any]) -> None:
        try:
            report = compare_on_project(
                project,
                rater,
                _sizes(options["compare_sampling"]),
                draws=options["draws"],
                seed=options["seed"],
                level=options["level"],
            )
        except Refusal as error:
            raise command_error(error) from error
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
            return
        self.stdout.write(
            f"{report['population']} final issues, rater {report['rater']}, level "
            f"{report['level']}, {report['draws']} draws of each kind per size (seed "
            f"{report['seed']})"
        )
        self.stdout.write(
            f"{'n':>6} {'active n':>9} {'uniform width':>14} {'active width':>13} "
            f"{'uniform n for it':>17} {'saved':>7}"
        )
        for row in report["comparisons"]:
            self.stdout.write(
                f"{row['size']:>6} {row['active_mean_drawn']:>9.1f} "
                f"{100 * row['uniform_mean_width']:>13.2f}% "
                f"{100 * row['active_mean_width']:>12.2f}% "
                f"{_or_beyond(row['uniform_labels_for_active_width']):>17} "
                f"{_or_beyond(row['human_labels_saved']):>7}"
            )
