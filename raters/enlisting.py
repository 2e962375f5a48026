"""Enlisting a machine rater in the adaptive stopping rule: the one rule the page, the API and
`manage.py enlist_rater` apply, and what the page shows beside the checkbox.

A rater is enlisted only on a current validation: the labels its current version gave final
issues, compared with the final labels (`raters.validation.rater_figures` on those issues), at
least one of them valid (n > 0). A rater that never ran has none; nor has a classifier trained
again since it last labeled the final issues (a run over the open issues alone trains a new
version, whose labels of the finals are then the old version's), until it labels them again.
Taking a rater back is always allowed. How good the validation must be is not decided here:
the page shows it beside the checkbox, and the lead judges.

Under the fixed stopping rule enlisting changes nothing (`labeling.stopping`): `rule_ignores`
says so, for the page, the API and the command.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext

from annotator.models import Project
from labeling.stopping import AdaptiveRule
from raters.models import MachineLabel, MachineRater
from raters.runs import RaterError, final_codes
from raters.validation import rater_figures


def _current_version(rater: MachineRater) -> dict[str, Any]:
    """The filter of the labels its current version gave: a classifier's labels name the
    training they came from (`model_version` "v<version>", `raters.classifier`); a rater that
    does not train has one version (its settings never change)."""
    if rater.kind == MachineRater.Kind.CLASSIFIER:
        return {"model_version": f"v{rater.version}"}
    return {}


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
        MachineLabel.objects.filter(
            rater=rater, is_current=True, issue_id__in=list(finals), **_current_version(rater)
        ).values_list("issue_id", flat=True)
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


def rule_ignores(project: Project) -> bool:
    """True when the project's stopping rule is fixed: an enlisted rater changes nothing."""
    return AdaptiveRule.of(project) is None


def enlist(rater: MachineRater, enlisted: bool, threshold: float | None) -> MachineRater:
    """A lead's choice: let the rater's labels count as one vote in the adaptive stopping rule
    from `threshold` confidence on (`labeling.stopping`), or take that back. Enlisting needs a
    current validation (RaterError naming `enlisted` otherwise) and a threshold."""
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise RaterError("confidence_threshold", gettext("between 0 and 1"))
    if enlisted and threshold is None:
        raise RaterError(
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
        raise RaterError("enlisted", why % {"name": rater.name})
    rater.enlisted = enlisted
    rater.confidence_threshold = threshold
    rater.save(update_fields=["enlisted", "confidence_threshold"])
    return rater
