"""Enlisting a machine rater in the adaptive stopping rule: the one rule the page, the API and
`manage.py enlist_rater` apply, and what the page shows beside the checkbox.

A rater is enlisted only on a current validation: the labels its current version gave final
issues, compared with the final labels (`raters.validation.rater_figures` on those issues), at
least one of them valid (n > 0). A rater that never ran has none; nor has a classifier trained
again since it last labeled the final issues (a run over the open issues alone trains a new
version, whose labels of the finals are then the old version's), until it labels them again.
Taking a rater back is always allowed. Beyond a current validation, the rater's current version
must pass the alternative annotator test (`raters.alt_test`, docs/DATASET.md) at the project's
margin ε: only then may it stand in for a volunteer. A rater trained again is tested again
(its new labels only), and a rater enlisted before its retraining stops voting until a lead
enlists it again (`raters.runs` takes it back when a training makes a new version).

Under the fixed stopping rule enlisting changes nothing (`labeling.stopping`): `rule_ignores`
says so, for the page, the API and the command.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext

from agreement.alt_test import MIN_ANNOTATORS, AltTestResult
from annotator.models import Project
from labeling.models import MachineRater
from labeling.stopping import AdaptiveRule
from lib.refusal import Refusal
from raters.alt_test import rater_alt_test
from raters.runs import final_codes
from raters.validation import rater_figures


def current_validation(
    rater: MachineRater, finals: dict[int, str] | None = None
) -> dict[str, Any] | None:
    """The validation figures of the rater's current version (n, kappa, accuracy at theme
    level, as `raters.validation` computes them), on the final issues that version labeled; None
    when it labeled none validly. `finals` is `raters.runs.final_codes(project)`, read once by
    a caller with many raters."""
    if finals is None:
        finals = final_codes(rater.project)
    labeled = set(
        rater.current_version_labels()
        .filter(issue_id__in=list(finals))
        .values_list("issue_id", flat=True)
    )
    figures = rater_figures(rater, {i: code for i, code in finals.items() if i in labeled})
    return figures if figures["n"] > 0 else None


def current_validations(project: Project) -> dict[int, dict[str, Any] | None]:
    """rater id -> `current_validation`, for each of the project's raters."""
    finals = final_codes(project)
    return {
        rater.pk: current_validation(rater, finals)
        for rater in MachineRater.objects.filter(project=project).select_related("project")
    }


def alt_test_refusal(rater: MachineRater, result: AltTestResult | None = None) -> str:
    """Why the rater may not stand in for a volunteer ("" if it may): its current version must
    pass the alternative annotator test (`raters.alt_test`) at the project's margin."""
    result = result or rater_alt_test(rater)
    if not result.enough_data:
        return gettext(
            "%(name)s cannot be enlisted yet: the alternative annotator test needs at least "
            "%(annotators)s annotators with %(items)s issues each that %(humans)s volunteers "
            "labeled; %(enough)s annotators have that many"
        ) % {
            "name": rater.name,
            "annotators": MIN_ANNOTATORS,
            "items": result.min_items,
            "humans": result.min_humans,
            "enough": result.n_annotators,
        }
    if not result.passed:
        return gettext(
            "%(name)s did not pass the alternative annotator test: it represents the other "
            "volunteers better than %(won)s of %(n)s annotators (winning rate %(rate).2f; "
            "0.50 needed, at the project's margin ε = %(epsilon)s)"
        ) % {
            "name": rater.name,
            "won": sum(c.won for c in result.comparisons),
            "n": result.n_annotators,
            "rate": result.winning_rate or 0.0,
            "epsilon": result.epsilon,
        }
    return ""


def rule_ignores(project: Project) -> bool:
    """True when the project's stopping rule is fixed: an enlisted rater changes nothing."""
    return AdaptiveRule.of(project) is None


def enlist(rater: MachineRater, enlisted: bool, threshold: float | None) -> MachineRater:
    """A lead's choice: let the rater's labels count as one vote in the adaptive stopping rule
    from `threshold` confidence on (`labeling.stopping`), or take that back. Enlisting needs a
    current validation (Refusal naming `enlisted` otherwise) and a threshold."""
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise Refusal("confidence_threshold", gettext("between 0 and 1"))
    if enlisted and threshold is None:
        raise Refusal(
            "confidence_threshold", gettext("an enlisted rater needs a confidence threshold")
        )
    if enlisted and current_validation(rater) is None:
        if not rater.runs.exists():
            why = gettext(
                "%(name)s has never run, so nothing says how often it agrees with the final "
                "labels: run it over the final issues first"
            )
        else:
            why = gettext(
                "%(name)s has no current validation: its current version has labeled no final "
                "issue (it may have been trained again since); run it over the final issues first"
            )
        raise Refusal("enlisted", why % {"name": rater.name})
    if enlisted:
        why = alt_test_refusal(rater)
        if why:
            raise Refusal("enlisted", why)
    rater.enlisted = enlisted
    rater.confidence_threshold = threshold
    rater.save(update_fields=["enlisted", "confidence_threshold"])
    return rater
