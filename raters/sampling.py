# ruff: noqa: RUF002 (the method is written in its paper's symbols)
"""Active sampling of a project's human sample (the method: `agreement.active`).

`draw_sample` gives every issue in scope (recall probes are outside it) an inclusion
probability π from the rater's uncertainty about its current label (√(1 − confidence); no
valid label or no confidence counts as unsure), mixed with a uniform share so that every issue
keeps a chance, scaled so that Σπ = the budget; draws each issue with its probability from a
recorded seed; records the draw (`SampleDraw`) and every issue's π, confidence and outcome
(`SampleInclusion`); and puts the drawn issues first in the part of the queue nobody has been
served yet (`labeling.setup.bring_to_front`), so volunteers label them first. Served positions
never move. The project's newest draw is its current one, and `raters.estimates` then uses it
instead of the queue prefix.

`compare_on_project` runs the simulator (`agreement.active.compare_sampling`) on a project's
final issues: replays of uniform and active samples of each size, as if only they had been
labeled.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.utils.translation import gettext

from agreement.active import (
    UNIFORM_SHARE,
    SamplingComparison,
    bernoulli_draw,
    compare_sampling,
    inclusion_probabilities,
    uncertainty,
)
from annotator.models import Project
from labeling.models import MachineRater, ProjectIssue
from labeling.setup import bring_to_front
from lib.inputlimits import integer_range
from lib.refusal import Refusal
from raters.estimates import (
    NO_CODE,
    final_codes_at,
    level_codes,
    machine_codes_at,
    scope_of,
)
from raters.models import SampleDraw, SampleInclusion


def rater_confidences(rater: MachineRater) -> dict[int, float | None]:
    """Each issue's confidence in the rater's current, valid label (None: none given)."""
    return dict(
        rater.current_version_labels().filter(valid=True).values_list("issue_id", "confidence")
    )


def _check(
    project: Project, rater: MachineRater, n_scope: int, size: int, seed: int, tau: float
) -> None:
    if rater.project_id != project.pk:
        raise Refusal("rater", gettext("not a rater of this project"))
    if n_scope < 2:
        raise Refusal("size", gettext("the project has fewer than 2 issues in scope"))
    if not 2 <= size <= n_scope:
        raise Refusal(
            "size",
            gettext("a whole number from 2 to the %(n)s issues in scope") % {"n": n_scope},
        )
    low, high = integer_range(SampleDraw, "seed")
    if not low <= seed <= high:
        raise Refusal(
            "seed", gettext("a whole number from %(low)s to %(high)s") % {"low": low, "high": high}
        )
    if not 0 < tau <= 1:
        raise Refusal("uniform_share", gettext("a number above 0 and at most 1"))


@transaction.atomic
def draw_sample(
    project: Project,
    rater: MachineRater,
    size: int,
    seed: int,
    uniform_share: float = UNIFORM_SHARE,
    user: User | None = None,
) -> SampleDraw:
    """Draw, record and queue an active sample of expected size `size` (the page's and the
    command's function)."""
    Project.objects.select_for_update().filter(pk=project.pk).first()
    scope = scope_of(project)
    _check(project, rater, len(scope.issue_ids), size, seed, uniform_share)
    confidence = rater_confidences(rater)
    # Issue id order, not queue order: a draw moves the queue, and the same seed must draw the
    # same issues again.
    ids = sorted(scope.issue_ids)
    conf = [confidence.get(i) for i in ids]
    pi = inclusion_probabilities([uncertainty(q) for q in conf], size, uniform_share)
    drawn = bernoulli_draw(pi, seed)
    SampleDraw.objects.filter(project=project, is_current=True).update(is_current=False)
    draw = SampleDraw.objects.create(
        project=project,
        rater=rater,
        rater_version=rater.version,
        budget=size,
        uniform_share=uniform_share,
        seed=seed,
        drawn=sum(drawn),
        created_by=user if user is not None and user.is_authenticated else None,
    )
    SampleInclusion.objects.bulk_create(
        (
            SampleInclusion(draw=draw, issue_id=i, probability=p, confidence=q, drawn=d)
            for i, p, q, d in zip(ids, pi, conf, drawn, strict=True)
        ),
        batch_size=5000,
    )
    chosen = {i for i, d in zip(ids, drawn, strict=True) if d}
    items = list(
        ProjectIssue.objects.filter(project=project, issue_id__in=chosen).values_list(
            "pk", flat=True
        )
    )
    bring_to_front(project, items, seed)
    return draw


def compare_on_project(
    project: Project,
    rater: MachineRater,
    sizes: list[int],
    draws: int = 50,
    seed: int = 0,
    level: str = "type",
    uniform_share: float = UNIFORM_SHARE,
) -> dict:
    """The simulator on the project's final issues in scope (the population whose shares are
    known): uniform against active samples of each size, with the rater's labels and
    confidences. JSON-ready."""
    from threadpoolctl import threadpool_limits

    if rater.project_id != project.pk:
        raise Refusal("rater", "not a rater of this project")
    if level not in ("type", "theme"):
        raise Refusal("level", "type or theme")
    finals = set(
        ProjectIssue.objects.filter(
            project=project, recall_probe__isnull=True, status=ProjectIssue.Status.FINAL
        ).values_list("issue_id", flat=True)
    )
    scope = scope_of(project)
    pool = [i for i in scope.issue_ids if i in finals]
    if len(pool) < 3:
        raise Refusal("compare_sampling", f"{len(pool)} final issues in scope; at least 3")
    bad = [n for n in sizes if not 2 <= n < len(pool)]
    if bad:
        raise Refusal(
            "compare_sampling", f"each size between 2 and {len(pool) - 1} (the final issues - 1)"
        )
    if draws < 1:
        raise Refusal("draws", "at least 1")
    human = final_codes_at(project, pool, level)
    machine = machine_codes_at(rater, level)
    confidence = rater_confidences(rater)
    codes = level_codes(project, level, set(human.values()) | set(machine.values()))
    with threadpool_limits(limits=1, user_api="blas"):
        rows: list[SamplingComparison] = compare_sampling(
            codes,
            [human.get(i, NO_CODE) for i in pool],
            [machine.get(i, NO_CODE) for i in pool],
            [confidence.get(i) for i in pool],
            sizes,
            draws=draws,
            seed=seed,
            uniform_share=uniform_share,
        )
    return {
        "method": "uniform vs active sampling (Zrnic & Candes 2024): per size, seeded uniform "
        "samples and Bernoulli draws with pi from sqrt(1 - confidence) mixed with a uniform "
        "share; PPI++ intervals (ppi-python); labels saved = n * (uniform width / active "
        "width)^2 - mean active size",
        "rater": rater.name,
        "level": level,
        "population": len(pool),
        "draws": draws,
        "seed": seed,
        "uniform_share": uniform_share,
        "comparisons": [row.as_json() for row in rows],
    }
