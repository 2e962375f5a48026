"""Prediction-powered estimates of a project's shares from a random human sample and a rater.

The human sample is a prefix of the project's queue. The queue is a seeded shuffle of the scope
(`labeling.setup.order_queue`, the seed in `Project.queue_seed`), so its first n issues are a
random sample: the estimate uses the longest prefix in which every issue is final. An issue
still open or in dispute ends the prefix, since dropping hard issues would bias the sample
toward easy ones; `Sample.held_back` says how many disputed issues stand between the prefix and
the issues nobody has finished. Recall probes (issues the keyword filter dropped, put in the
queue on purpose) are outside the scope and never part of it. With a pilot, the queue starts
with a sample stratified by repository in proportion to size, which is treated as uniform (its
variance is at most a uniform sample's).

With an active sample (`raters.sampling.draw_sample`, the project's current `SampleDraw`) the
human sample is instead the drawn issues: the longest run of them, in queue order, in which
every one is final (the draw's issues are first in the queue in a seeded random order, so a
run of them is a uniform subsample of the draw), weighted by 1/π
(`agreement.active.estimate_shares_active`); a disputed drawn issue holds it back the same way,
and `Sample.pending` counts the drawn issues not in it yet.

`--replay-sample N --seed S` instead draws a uniform random N of the scope's final issues, as
if only they had been labeled: to plan a study, or to check the method on a finished one.

The rater's labels on every issue in scope are the machine's side; an issue it has no valid
label for counts as a label of no code. The arithmetic is `agreement.estimates` (ppi-python).
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass

from django.utils.translation import gettext

from agreement.active import estimate_shares_active
from agreement.estimates import Plan, ShareEstimate, estimate_shares, plan_sizes
from agreement.table_one import issue_year
from annotator.models import Project
from labeling.models import MachineRater, ProjectIssue, Resolution
from labeling.stopping import AdaptiveRule
from lib.refusal import Refusal
from raters.backends import FP_CODE, theme_code, type_code
from raters.models import SampleDraw
from taxonomy.lineage import Translator
from taxonomy.models import TaxonomyNode

LEVELS = ("type", "theme")
BY = ("repository", "year")
NO_CODE = ""


@dataclass(frozen=True)
class Sample:
    issue_ids: list[int]  # the human sample, in queue order
    method: str  # "queue-prefix", "replay" or "active"
    seed: int
    in_scope: int
    held_back: int  # disputed issues that hold the prefix back
    # An active sample: the drawn issues' inclusion probabilities, the draw, and how many drawn
    # issues are not in the sample yet.
    probabilities: dict[int, float] | None = None
    draw: SampleDraw | None = None
    pending: int = 0

    def summary(self) -> dict:
        out: dict = {
            "method": self.method,
            "seed": self.seed,
            "size": len(self.issue_ids),
            "held_back": self.held_back,
            "rule": RULES[self.method],
        }
        if self.draw is not None and self.probabilities is not None:
            pi = sorted(self.probabilities.values())
            out["active"] = {
                "rater": self.draw.rater.name,
                "rater_version": self.draw.rater_version,
                "budget": self.draw.budget,
                "drawn": self.draw.drawn,
                "pending": self.pending,
                "uniform_share": self.draw.uniform_share,
                "drawn_at": self.draw.created_at.isoformat(),
                "probability_min": pi[0] if pi else None,
                "probability_median": pi[len(pi) // 2] if pi else None,
                "probability_max": pi[-1] if pi else None,
            }
        return out


RULES = {
    "queue-prefix": "the longest prefix of the seeded queue order in which every issue is final",
    "replay": "a uniform random draw of the scope's final issues",
    "active": "an active draw (inclusion probabilities from the rater's uncertainty, weighted "
    "by their inverse): the longest run of the drawn issues, in queue order, in which every "
    "one is final",
}


@dataclass(frozen=True)
class Scope:
    issue_ids: list[int]  # every issue in scope, in queue order
    group: dict[int, str]  # issue id -> repository full name
    year: dict[int, int | None]


def scope_of(project: Project) -> Scope:
    rows = (
        ProjectIssue.objects.filter(project=project, recall_probe__isnull=True)
        .order_by("position", "id")
        .values_list(
            "issue_id",
            "issue__repository__owner",
            "issue__repository__name",
            "issue__created_at",
            "issue__study_year",
        )
    )
    ids, group, year = [], {}, {}
    for issue_id, owner, name, created_at, study_year in rows.iterator(chunk_size=5000):
        ids.append(issue_id)
        group[issue_id] = f"{owner}/{name}"
        year[issue_id] = issue_year(created_at, study_year)
    return Scope(ids, group, year)


def queue_sample(project: Project, scope: Scope) -> Sample:
    """The longest prefix of the queue whose issues are all final."""
    prefix, held_back = _final_prefix(project, scope.issue_ids)
    return Sample(prefix, "queue-prefix", project.queue_seed, len(scope.issue_ids), held_back)


def current_draw(project: Project) -> SampleDraw | None:
    return (
        SampleDraw.objects.filter(project=project, is_current=True).select_related("rater").first()
    )


def active_sample(project: Project, scope: Scope, draw: SampleDraw) -> Sample:
    """The longest run of the draw's issues, in queue order, whose issues are all final."""
    covered = set(draw.inclusions.values_list("issue_id", flat=True))
    later = sum(i not in covered for i in scope.issue_ids)
    if later:
        # An issue with no chance of being drawn would be left out of every estimate.
        raise Refusal(
            "sample",
            gettext("%(n)s issues joined the scope after the active draw; draw the sample again")
            % {"n": later},
        )
    probabilities = dict(draw.inclusions.filter(drawn=True).values_list("issue_id", "probability"))
    drawn = [i for i in scope.issue_ids if i in probabilities]
    prefix, held_back = _final_prefix(project, drawn)
    return Sample(
        prefix,
        "active",
        draw.seed,
        len(scope.issue_ids),
        held_back,
        probabilities={i: probabilities[i] for i in prefix},
        draw=draw,
        pending=len(drawn) - len(prefix),
    )


def _final_prefix(project: Project, ordered: list[int]) -> tuple[list[int], int]:
    """The longest prefix of `ordered` in which every issue is final, and how many disputed
    issues stand between it and the first issue nobody has labeled."""
    status = dict(
        ProjectIssue.objects.filter(project=project, recall_probe__isnull=True).values_list(
            "issue_id", "status"
        )
    )
    prefix: list[int] = []
    for issue_id in ordered:
        if status[issue_id] != ProjectIssue.Status.FINAL:
            break
        prefix.append(issue_id)
    rest = ordered[len(prefix) :]
    labeled = set(
        ProjectIssue.objects.filter(
            project=project, issue_id__in=rest, annotation_count__gt=0
        ).values_list("issue_id", flat=True)
    )
    # Disputed issues before the first issue nobody has labeled: finishing them lengthens it.
    held_back = 0
    for issue_id in rest:
        if issue_id not in labeled and status[issue_id] == ProjectIssue.Status.OPEN:
            break
        held_back += status[issue_id] == ProjectIssue.Status.DISAGREEMENT
    return prefix, held_back


def replay_sample(project: Project, scope: Scope, n: int, seed: int) -> Sample:
    finals = set(
        ProjectIssue.objects.filter(
            project=project, recall_probe__isnull=True, status=ProjectIssue.Status.FINAL
        ).values_list("issue_id", flat=True)
    )
    pool = [i for i in scope.issue_ids if i in finals]
    if not 2 <= n <= len(pool):
        raise Refusal(
            "replay_sample",
            gettext("between 2 and the %(n)s final issues in scope") % {"n": len(pool)},
        )
    return Sample(sorted(random.Random(seed).sample(pool, n)), "replay", seed, len(pool), 0)


def _level_code(code: str, level: str) -> str:
    return type_code(code) if level == "type" else theme_code(code)


def final_codes_at(project: Project, issue_ids: list[int], level: str) -> dict[int, str]:
    translator = Translator(project.taxonomy_version)
    rows = Resolution.objects.filter(
        project=project, is_current=True, issue_id__in=issue_ids
    ).values_list("issue_id", "is_false_positive", "issue_type_id", "theme_id", "sub_theme_id")
    return {
        issue: _level_code(translator.label_from_ids(fp, t, th, s).code, level)
        for issue, fp, t, th, s in rows.iterator(chunk_size=5000)
    }


def machine_codes_at(rater: MachineRater, level: str) -> dict[int, str]:
    """The valid labels of the rater's current version (`current_version_labels`): the bias
    measured on the sample is then the bias of the very predictor applied to the rest; an issue
    its current version has not labeled counts as no code."""
    translator = Translator(rater.project.taxonomy_version)
    rows = (
        rater.current_version_labels()
        .filter(valid=True)
        .values_list("issue_id", "is_false_positive", "issue_type_id", "theme_id", "sub_theme_id")
    )
    return {
        issue: _level_code(translator.label_from_ids(fp, t, th, s).code, level)
        for issue, fp, t, th, s in rows.iterator(chunk_size=5000)
    }


def level_codes(project: Project, level: str, seen: set[str]) -> list[str]:
    depth = 1 if level == "type" else 2
    nodes = [
        code
        for code in TaxonomyNode.objects.filter(version_id=project.taxonomy_version_id).values_list(
            "code", flat=True
        )
        if code.count(".") == depth - 1
    ]
    extra = sorted(seen - set(nodes) - {FP_CODE, NO_CODE})
    return sorted(nodes) + extra + [FP_CODE]


@dataclass(frozen=True)
class Estimates:
    rater: MachineRater
    level: str
    by: str | None
    sample: Sample
    n_total: int
    rows: list[tuple[str | None, ShareEstimate]]
    plan: Plan | None = None

    def as_json(self) -> dict:
        out = {
            "method": "PPI++ (ppi-python ppi_mean_ci, power-tuned λ per code; classical: "
            "classical_mean_ci on the human sample alone; 95 % normal intervals)",
            "rater": self.rater.name,
            "rater_version": self.rater.version,
            "level": self.level,
            "by": self.by,
            "n_human": len(self.sample.issue_ids),
            "n_total": self.n_total,
            "sample": self.sample.summary(),
            "estimates": [estimate.as_json(by) for by, estimate in self.rows],
        }
        if self.plan is not None:
            out["plan"] = {
                "half_width": self.plan.half_width,
                "n_classical": self.plan.n_classical,
                "n_ppi": self.plan.n_ppi,
                "n_total": self.plan.n_total,
            }
        return out


def estimate(
    project: Project,
    rater: MachineRater,
    level: str = "type",
    by: str | None = None,
    replay: int | None = None,
    seed: int = 0,
    plan_half_width: float | None = None,
) -> Estimates:
    """What the command, the page and the API call."""
    from threadpoolctl import threadpool_limits

    # The matrices are small (codes x issues of a group): BLAS threads only contend for the
    # cores, and on a loaded 2-core host np.cov took 5x longer with two threads than with one.
    with threadpool_limits(limits=1, user_api="blas"):
        return _estimate(project, rater, level, by, replay, seed, plan_half_width)


def _estimate(
    project: Project,
    rater: MachineRater,
    level: str,
    by: str | None,
    replay: int | None,
    seed: int,
    plan_half_width: float | None,
) -> Estimates:
    if level not in LEVELS:
        raise Refusal("level", gettext("type or theme"))
    if by not in (None, *BY):
        raise Refusal("by", gettext("repository or year"))
    if rater.project_id != project.pk:
        raise Refusal("rater", gettext("not a rater of this project"))
    if rater.enlisted and AdaptiveRule.of(project) is not None:
        # Its confident votes decide issues early beside one human label, so the sample's final
        # labels would be built partly from the machine's: PPI's bias correction needs finals
        # independent of the machine it corrects.
        raise Refusal(
            "rater",
            gettext(
                "%(name)s is enlisted in the adaptive stopping rule: its votes may have decided "
                "final labels of the sample, which must not depend on it; estimate with a rater "
                "whose labels never counted"
            )
            % {"name": rater.name},
        )
    scope = scope_of(project)
    draw = current_draw(project) if replay is None else None
    if replay is not None:
        sample = replay_sample(project, scope, replay, seed)
    elif draw is not None:
        sample = active_sample(project, scope, draw)
    else:
        sample = queue_sample(project, scope)
    if len(sample.issue_ids) < 2:
        where = (
            gettext("%(n)s issues of the active draw are final")
            if draw is not None
            else gettext("%(n)s issues at the front of the queue are final")
        ) % {"n": len(sample.issue_ids)}
        raise Refusal(
            "sample",
            gettext("%(where)s; at least 2 are needed (%(held)s disputed issues hold it back)")
            % {"where": where, "held": sample.held_back},
        )
    if sample.probabilities is not None and plan_half_width is not None:
        raise Refusal(
            "plan",
            gettext("the plan assumes a uniform sample; for an active one use --compare-sampling"),
        )
    human = final_codes_at(project, sample.issue_ids, level)
    machine = machine_codes_at(rater, level)
    codes = level_codes(project, level, set(human.values()) | set(machine.values()))
    in_sample = set(sample.issue_ids)
    groups: dict[str | None, list[int]] = defaultdict(list)
    for issue_id in scope.issue_ids:
        key: str | None = None
        if by == "repository":
            key = scope.group[issue_id]
        elif by == "year":
            year = scope.year[issue_id]
            key = str(year) if year is not None else None
        groups[key].append(issue_id)
    rows: list[tuple[str | None, ShareEstimate]] = []
    for key in sorted(groups, key=lambda k: (k is None, k or "")):
        members = groups[key]
        sampled = [i for i in members if i in in_sample]
        if len(sampled) < 2:
            continue  # a group the sample has not reached: nothing to say yet
        if sample.probabilities is not None:
            # Active: weighted by 1/π, the machine's labels on every issue of the group.
            shares = estimate_shares_active(
                codes,
                [human.get(i, NO_CODE) for i in sampled],
                [machine.get(i, NO_CODE) for i in sampled],
                [machine.get(i, NO_CODE) for i in members],
                [sample.probabilities[i] for i in sampled],
            )
        else:
            rest = [machine.get(i, NO_CODE) for i in members if i not in in_sample]
            shares = estimate_shares(
                codes,
                [human.get(i, NO_CODE) for i in sampled],
                [machine.get(i, NO_CODE) for i in sampled],
                rest,
            )
        rows += [(key, share) for share in shares]
    plan = None
    if plan_half_width is not None:
        try:
            plan = plan_sizes(
                codes,
                [human.get(i, NO_CODE) for i in sample.issue_ids],
                [machine.get(i, NO_CODE) for i in sample.issue_ids],
                [machine.get(i, NO_CODE) for i in scope.issue_ids if i not in in_sample],
                plan_half_width,
            )
        except ValueError as error:
            raise Refusal("plan", str(error)) from error
    return Estimates(rater, level, by, sample, len(scope.issue_ids), rows, plan)
