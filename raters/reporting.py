"""Estimates with machine help as a release and Table I report them (#29): what
`raters.estimates.estimate` gives, when it has something to say.

An estimate needs a human sample of at least 2 final issues (`estimate` refuses fewer) and
is worth reporting only when the sample is smaller than the scope: once every issue in scope
is final, the shares are counted, not estimated, and saying "nothing to estimate" is honest
where an interval around a count would not be. A rater with no current valid label has
nothing to add (its estimate would be the human sample's alone).

`release_estimates(rater)` is what a release stores per rater (`machine_raters.json`, under
`estimates`; the datapackage's `machine_raters` property; DATASHEET.md's "Estimates with machine
help"): the type shares over the scope and per repository (Table I's rows), and the theme
shares over the scope, each exactly `estimate(...).as_json()`.

`table_one_rater(project, requested)` picks the rater whose estimates stand beside Table I's
counts: the one asked for (`?rater=`), else the enlisted rater with the highest alt-test
advantage probability (ties by name), else none; a rater whose votes count in the adaptive
stopping rule is never chosen, and its estimates are refused (`rater_votes` in a release):
the sample's finals may have been decided with its votes, and PPI needs them independent of it.
"""

from __future__ import annotations

from typing import Any

from annotator.models import Project
from labeling.models import MachineRater
from labeling.stopping import AdaptiveRule
from lib.refusal import Refusal
from raters.alt_test import human_theme_codes, rater_alt_test
from raters.estimates import estimate

ESTIMATED = "estimated"
NO_SAMPLE = "no_sample"
NOTHING_TO_ESTIMATE = "nothing_to_estimate"
NO_MACHINE_LABELS = "no_machine_labels"
RATER_VOTES = "rater_votes"

# English, as a release is written (machine-readable notes in a release's files).
NOTES = {
    ESTIMATED: "PPI++ shares from the human sample and the rater's labels on every issue in scope",
    NOTHING_TO_ESTIMATE: "every issue in scope is final and in the human sample: the shares are "
    "counted (Table I), there is nothing to estimate",
    NO_MACHINE_LABELS: "the rater has no current valid label: it adds nothing to the human sample",
    RATER_VOTES: "the rater is enlisted in the adaptive stopping rule, so final labels of the "
    "sample may have been decided with its votes: no estimate is made with it",
}


def has_labels(rater: MachineRater) -> bool:
    return rater.current_version_labels().filter(valid=True).exists()


def votes(rater: MachineRater) -> bool:
    """Its labels count in the adaptive stopping rule: the sample's finals may depend on them,
    so no estimate is made with it (`raters.estimates`)."""
    return rater.enlisted and AdaptiveRule.of(rater.project) is not None


def release_estimates(rater: MachineRater) -> dict[str, Any]:
    """`status` (estimated, no_sample, nothing_to_estimate, no_machine_labels) and `note`;
    when estimated, `type`, `type_by_repository` and `theme`: `estimate(...).as_json()`."""
    if not has_labels(rater):
        return {"status": NO_MACHINE_LABELS, "note": NOTES[NO_MACHINE_LABELS]}
    if votes(rater):
        return {"status": RATER_VOTES, "note": NOTES[RATER_VOTES]}
    project = rater.project
    try:
        by_type = estimate(project, rater, level="type").as_json()
    except Refusal as error:
        if error.field != "sample":
            raise
        return {"status": NO_SAMPLE, "note": error.message}
    if by_type["n_human"] >= by_type["n_total"]:
        return {
            "status": NOTHING_TO_ESTIMATE,
            "note": NOTES[NOTHING_TO_ESTIMATE],
            "n_human": by_type["n_human"],
            "n_total": by_type["n_total"],
            "sample": by_type["sample"],
        }
    return {
        "status": ESTIMATED,
        "note": NOTES[ESTIMATED],
        "type": by_type,
        "type_by_repository": estimate(project, rater, level="type", by="repository").as_json(),
        "theme": estimate(project, rater, level="theme").as_json(),
    }


def table_one_rater(project: Project, requested: MachineRater | None = None) -> MachineRater | None:
    """The rater asked for, else the enlisted one with the best advantage probability (never
    one whose votes count in the adaptive stopping rule: its estimates are refused)."""
    if requested is not None:
        return requested
    enlisted = [
        rater
        for rater in MachineRater.objects.filter(project=project, enlisted=True).order_by("name")
        if not votes(rater)
    ]
    if len(enlisted) <= 1:
        return enlisted[0] if enlisted else None
    humans = human_theme_codes(project)

    def rho(rater: MachineRater) -> float:
        value = rater_alt_test(rater, humans).advantage_probability
        return value if value is not None else -1.0

    return max(enlisted, key=rho)  # max keeps the first (by name) of equals
