"""`manage.py simulate_policy --project NAME [--min 2] [--lead 2] [--max K] [--orders 20]
[--seed 1] [--threshold 0] [--machine-rater NAME [--confidence T]] [--json]`: replay a project's
labels under the adaptive stopping rule (agreement.simulation); with `--machine-rater`, with that
rater enlisted (its labels of at least confidence T, default its own threshold, as one vote)
beside the human-only rule on the same orders (`simulate_machine`: the orders the same `--seed`
gives without `--machine-rater`), with the issues it makes cost more and fewer human labels
(`costs_more`, `costs_fewer`)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agreement.simulation import machine_votes, run, simulate_machine
from annotator.models import Project
from lib.refusal import Refusal, command_error


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


class Command(BaseCommand):
    help = (
        "Replay a project's labels in random rater orders under the adaptive stopping rule: "
        "labels per issue, share of issues with the same final, Fleiss' kappa; fixed panels beside."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True)
        parser.add_argument("--min", type=int, default=2, dest="min_labels")
        parser.add_argument("--lead", type=int, default=2)
        parser.add_argument("--max", type=int, default=None, help="K (default: the widest panel)")
        parser.add_argument("--orders", type=int, default=20)
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument(
            "--threshold",
            type=float,
            default=0.0,
            help="share of the K votes a plurality needs at K (0: any strict plurality)",
        )
        parser.add_argument(
            "--machine-rater", default=None, help="replay with this machine rater enlisted"
        )
        parser.add_argument(
            "--confidence",
            type=float,
            default=None,
            help="the machine rater's vote counts from this confidence (default: its threshold)",
        )
        parser.add_argument("--json", action="store_true", help="print the report as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            raise CommandError(f"project: no project named {options['project']!r}")
        if options["machine_rater"] is not None:
            self._machine(project, options)
            return
        if options["confidence"] is not None:
            raise CommandError("confidence: only with --machine-rater")
        try:
            report = run(project, **_policy(options))
        except Refusal as error:
            raise command_error(error) from error
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2, ensure_ascii=False))
            return
        policy = report["policy"]
        self.stdout.write(
            f"{report['project']}: {report['issues']} issues replayed ({report['with_final']} "
            f"with a final), {report['left_out']} left out (fewer than {policy['max']} labels); "
            f"min {policy['min']}, lead {policy['lead']}, max {policy['max']}, "
            f"{policy['orders']} orders, seed {policy['seed']}"
        )
        header = f"{'':<24}{'labels/issue':>13}{'same final':>12}{'needs lead':>12}{'kappa':>8}"
        rows = [("All issues", report)] + [
            (f"{t['name']} ({code})", t) for code, t in report["by_type"].items()
        ]
        for name, figures in rows:
            self.stdout.write("")
            self.stdout.write(f"{name}, {figures.get('issues', report['issues'])} issues")
            self.stdout.write(header)
            self.stdout.write(
                f"{'adaptive lead ' + str(policy['lead']):<24}"
                f"{_num(figures['labels_per_issue']['mean'], 2):>13}"
                f"{_pct(figures['same_final']):>12}{_pct(figures['needs_lead']):>12}"
                f"{_num(figures['kappa']):>8}"
            )
            for n, fixed in figures["fixed"].items():
                self.stdout.write(
                    f"{'fixed ' + n:<24}{fixed['labels_per_issue']:>13.2f}"
                    f"{_pct(fixed['same_final']):>12}{_pct(fixed['needs_lead']):>12}"
                    f"{_num(fixed['kappa']):>8}"
                )
            shares = figures["labels_per_issue"]["distribution"]
            distribution = ", ".join(f"{n}: {_pct(share)}" for n, share in shares.items())
            self.stdout.write(f"  labels per issue under the policy: {distribution}")

    def _machine(self, project: Project, options: dict) -> None:
        try:
            votes = machine_votes(project, options["machine_rater"], options["confidence"])
            report = simulate_machine(project, votes, **_policy(options))
        except Refusal as error:
            raise command_error(error) from error
        report["machine_rater"] = options["machine_rater"]
        report["confidence"] = options["confidence"]
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2, ensure_ascii=False))
            return
        policy = report["policy"]
        self.stdout.write(
            f"{report['project']}: {report['issues']} issues replayed ({report['with_final']} "
            f"with a final), {report['left_out']} left out; min {policy['min']}, lead "
            f"{policy['lead']}, max {policy['max']}; machine rater {report['machine_rater']} "
            f"votes on {report['machine_votes']} of them"
        )
        self.stdout.write(f"{'':<24}{'human labels/issue':>19}{'same final':>12}{'needs lead':>12}")
        human = report["human_only"]
        for name, labels, same, needs in (
            ("with the machine", report["human_labels_per_issue"], report["same_final"],
             report["needs_lead"]),
            ("humans only", human["labels_per_issue"], human["same_final"], human["needs_lead"]),
        ):  # fmt: skip
            self.stdout.write(f"{name:<24}{_num(labels, 2):>19}{_pct(same):>12}{_pct(needs):>12}")
        self.stdout.write(
            f"per issue, with the machine: {report['costs_more']} issues need more human labels, "
            f"{report['costs_fewer']} fewer (over the same {policy['orders']} orders)"
        )


def _policy(options: dict) -> dict:
    """The replay's settings from the command's options, for either simulation."""
    return {
        "min_labels": options["min_labels"],
        "lead": options["lead"],
        "k": options["max"],
        "orders": options["orders"],
        "seed": options["seed"],
        "threshold": options["threshold"],
    }
