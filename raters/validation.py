"""How good each machine rater is, measured on the project's final issues, out of sample.

Per rater, on the final issues it labeled: n (valid labels), Cohen's kappa against the final
label at type and theme level, accuracy at theme level, the invalid-output rate (invalid
labels among all its current labels on final issues), and an accuracy-coverage curve: for each
confidence threshold, the share of the n labels at or above it and their accuracy; and how
well its confidences are calibrated (`raters.calibration`): the reliability bins and the
expected calibration error over the labels that have a confidence. Beside them
the human annotators' kappa against the final label at theme level (median, min and max over
annotators, from `agreement.measures`), and Cohen's kappa between every pair of machine raters
on the issues both labeled validly.

A classifier's labels on final issues are cross-fitted (`raters.classifier`), and an llm's
few-shot examples never include the issue labeled (`raters.prompt.few_shot_for`), so these
figures are out of sample, with one exception: an llm rater with `prompt_details` on shows the
taxonomy's example details, which annotators wrote for the study's issues and which are not
linked to issue ids, so they may describe the very issue being labeled and cannot be left out
per issue; its figures may then not be fully out of sample (off by default; the page marks
such a rater). Per rater also the alternative annotator test (`raters.alt_test`: may it stand
in for a volunteer, at the project's margin ε), under `alt_test`. Kappa is
`agreement.measures.cohen` over the union of the codes seen; "FP" is a category at every level.
`validation_report()` is what the page, the API and `manage.py raters` call; the JSON keys are
the issue's (#23).
"""

from __future__ import annotations

import statistics
from itertools import combinations
from typing import Any

from agreement.measures import cohen, load_labels
from annotator.models import Project
from labeling.models import MachineLabel, MachineRater
from raters.alt_test import rater_alt_tests
from raters.backends import theme_code, type_code
from raters.calibration import expected_calibration_error, reliability
from raters.runs import final_codes

THRESHOLDS = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


def kappa(a: list[str], b: list[str]) -> float | None:
    """Cohen's kappa of two lists of codes on the same items."""
    import numpy as np

    categories = sorted(set(a) | set(b))
    index = {code: i for i, code in enumerate(categories)}
    return cohen(
        np.array([index[c] for c in a], dtype=np.int64),
        np.array([index[c] for c in b], dtype=np.int64),
        len(categories),
    )


def current_codes(rater: MachineRater) -> dict[int, tuple[str, float | None, bool]]:
    """The rater's current label per issue: (code, confidence, valid)."""
    rows = (
        MachineLabel.objects.filter(rater=rater, is_current=True)
        .select_related("issue_type", "theme", "sub_theme")
        .only(
            "issue_id",
            "valid",
            "confidence",
            "is_false_positive",
            "issue_type__code",
            "theme__code",
            "sub_theme__code",
        )
    )
    return {row.issue_id: (row.label_code, row.confidence, row.valid) for row in rows}


def rater_figures(rater: MachineRater, finals: dict[int, str]) -> dict[str, Any]:
    labels = current_codes(rater)
    on_final = {i: v for i, v in labels.items() if i in finals}
    valid = {i: v for i, v in on_final.items() if v[2]}
    ids = sorted(valid)
    machine = [valid[i][0] for i in ids]
    final = [finals[i] for i in ids]
    hits = [theme_code(m) == theme_code(f) for m, f in zip(machine, final, strict=True)]
    confidences = [float(valid[i][1] or 0.0) for i in ids]
    coverage = []
    for threshold in THRESHOLDS:
        kept = [h for h, c in zip(hits, confidences, strict=True) if c >= threshold]
        coverage.append(
            [
                threshold,
                len(kept) / len(ids) if ids else 0.0,
                sum(kept) / len(kept) if kept else None,
            ]
        )
    scored = [
        (float(confidence), hit)
        for i, hit in zip(ids, hits, strict=True)
        if (confidence := valid[i][1]) is not None
    ]
    bins = reliability([c for c, _ in scored], [hit for _, hit in scored])
    return {
        "name": rater.name,
        "kind": rater.kind,
        "n": len(ids),
        "kappa_type": kappa([type_code(m) for m in machine], [type_code(f) for f in final])
        if ids
        else None,
        "kappa_theme": kappa([theme_code(m) for m in machine], [theme_code(f) for f in final])
        if ids
        else None,
        "accuracy_theme": sum(hits) / len(hits) if hits else None,
        "invalid_rate": (len(on_final) - len(valid)) / len(on_final) if on_final else None,
        "coverage": coverage,
        "ece": expected_calibration_error(bins),
        "reliability": bins,
    }


def human_figures(project: Project) -> dict[str, float | None]:
    """Each annotator's Cohen's kappa against the final label at theme level, summarised."""
    import numpy as np

    labels, _ = load_labels(project)
    final = labels.final["theme"]
    n_categories = len(labels.categories["theme"])
    kappas = []
    for r in range(len(labels.raters)):
        mine = (labels.rater == r) & (labels.cats["theme"] >= 0)
        issues = labels.issue[mine]
        compared = final[issues] >= 0
        if not compared.any():
            continue
        value = cohen(
            labels.cats["theme"][mine][compared].astype(np.int64),
            final[issues][compared].astype(np.int64),
            n_categories,
        )
        if value is not None:
            kappas.append(value)
    return {
        "kappa_theme_median": statistics.median(kappas) if kappas else None,
        "kappa_theme_min": min(kappas) if kappas else None,
        "kappa_theme_max": max(kappas) if kappas else None,
    }


def model_model(raters: list[MachineRater]) -> list[list[Any]]:
    """Cohen's kappa at theme level for every pair of raters, on issues both labeled validly."""
    codes = {
        r.pk: {i: theme_code(v[0]) for i, v in current_codes(r).items() if v[2]} for r in raters
    }
    out: list[list[Any]] = []
    for a, b in combinations(raters, 2):
        shared = sorted(set(codes[a.pk]) & set(codes[b.pk]))
        value = (
            kappa([codes[a.pk][i] for i in shared], [codes[b.pk][i] for i in shared])
            if shared
            else None
        )
        out.append([a.name, b.name, value])
    return out


def validation_report(project: Project) -> dict[str, Any]:
    raters = list(MachineRater.objects.filter(project=project).order_by("name"))
    finals = final_codes(project)
    # The alternative annotator test reads every annotator's labels: cached per state.
    alt_tests = rater_alt_tests(project, raters)
    return {
        "raters": [
            {**rater_figures(rater, finals), "alt_test": alt_tests[rater.pk]} for rater in raters
        ],
        "human": human_figures(project),
        "model_model": model_model(raters),
    }
