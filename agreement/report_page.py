"""The agreement report page's data, shaped for its template and its chart from the report
(`agreement.measures.agreement_report`), Table I and the label audit's accuracies.

The view only picks the taxonomy version and renders; the shaping is here and tested without a
page (`tests/agreement/test_report_shaping.py`): the confusion heat map (a CSS class per cell,
since the CSP forbids inline colours), the chart's kappa and alpha per group and level, the
Landis & Koch reading scale as ranges, and the annotators with the Dawid-Skene accuracy beside
them (leads and admins only).

The report's data is English (the API, CSV and release read it); the page words it again in the
reader's language from the same figures (`display_rows`, the group and level names of the chart
and the heat map), through the wording functions of `agreement.measures` with `gettext`.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from django.utils.translation import gettext

from agreement.audit import ACCURACY_DEFINITION, cached_rater_accuracies
from agreement.measures import (
    ALL,
    ALL_ISSUES,
    FALSE_POSITIVE,
    FP,
    LANDIS_KOCH,
    LEVEL_NAMES,
    agreement_report,
    degenerate_reason,
    excluded_reason_of,
    reading_of,
)
from agreement.table_one import TYPE_COLUMNS, YEARS, table_one
from annotator.models import Project
from taxonomy.models import TaxonomyVersion

HEAT_CLASSES = 10  # heat-0 .. heat-9 in static/css/agreement.css


def heat_class(value: int, top: int) -> str:
    """The CSS class of a heat-map cell: heat-0 for none, up to heat-9 for the largest count
    (`top`); any count above zero is at least heat-1."""
    top_class = HEAT_CLASSES - 1
    return f"heat-{min(top_class, (top_class * value + top - 1) // top) if top else 0}"


def group_name(code: str, name: str) -> str:
    """A group's or category's name on the page: the taxonomy's name as written, but the
    report's own "All issues" and "false positive" in the reader's language."""
    if code == ALL:
        return gettext(ALL_ISSUES)
    if code == FP:
        return gettext(FALSE_POSITIVE)
    return name


def heat_map(confusions: dict[str, Any]) -> list[dict[str, Any]]:
    """The confusion matrix of themes as rows of cells (value and CSS class), one scale for all."""
    top = max((max(row) for row in confusions["matrix"] if row), default=0)
    return [
        {
            "code": code,
            "name": group_name(code, name),
            "cells": [{"value": v, "cls": heat_class(v, top)} for v in row],
        }
        for code, name, row in zip(
            confusions["themes"], confusions["names"], confusions["matrix"], strict=True
        )
    ]


def level_chart(report: dict[str, Any]) -> dict[str, Any]:
    """The chart's data (static/js/agreement.js): the level names and, per group, Fleiss' kappa
    and Krippendorff's alpha at each level (None where not measured)."""
    levels = report["levels"]
    return {
        "levels": [gettext(LEVEL_NAMES[level]) for level in levels],
        "groups": [
            {
                "name": group_name(g["code"], g["name"]),
                "kappa": [g["levels"][level]["kappa"] for level in levels],
                "alpha": [g["levels"][level]["alpha"] for level in levels],
            }
            for g in report["groups"]
        ],
    }


def reading_scale() -> list[tuple[float, float, str]]:
    """Landis & Koch's words as (low, high, word) ranges, in the reader's language."""
    return [(low, high, gettext(word)) for (low, _), (high, word) in pairwise(LANDIS_KOCH)]


def display_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The agreement table's rows (type x level) as the page shows them: the figures of
    `agreement.measures.report_rows`, with the names, readings and reasons in the reader's
    language (the report's data keeps them in English)."""
    rows = []
    for group in report["groups"]:
        for level in report["levels"]:
            stats = group["levels"][level]
            rows.append(
                {
                    "type": group_name(group["code"], group["name"]),
                    "type_code": group["code"],
                    "level": gettext(LEVEL_NAMES[level]),
                    "issues_in_group": group["issues"],
                    "issues_used": stats["issues"],
                    "excluded": stats["excluded"],
                    "excluded_reason": excluded_reason_of(stats, gettext),
                    "raters": stats["raters"],
                    "fleiss_kappa": stats["kappa"],
                    "krippendorff_alpha": stats["alpha"],
                    "observed_agreement": stats["observed"],
                    "reading": reading_of(stats, gettext),
                    "note": degenerate_reason(group["code"], group["name"], level, gettext),
                }
            )
    return rows


def annotators_with_accuracy(
    annotators: list[dict[str, Any]], model_accuracy: dict[str, float] | None
) -> list[dict[str, Any]]:
    """The report's annotators, each with the model's accuracy of their pseudonym (None when
    the viewer may not see it or the model has no estimate for them)."""
    return [{**a, "model_accuracy": (model_accuracy or {}).get(a["pseudonym"])} for a in annotators]


def report_page(
    project: Project, version: TaxonomyVersion, with_model_accuracy: bool
) -> dict[str, Any]:
    """Everything the report page shows under `version`; the model's accuracy column only
    `with_model_accuracy` (the audit's roles)."""
    report = agreement_report(project, version=version)
    rows, total = table_one(project)
    model_accuracy = cached_rater_accuracies(project, version) if with_model_accuracy else None
    return {
        "report": report,
        "rows": display_rows(report),
        "heat": heat_map(report["confusions"]),
        "chart": level_chart(report),
        "table_one_rows": rows,
        "table_one_total": total,
        "table_one_average_rate": (
            None if total.average_rate is None else round(100 * total.average_rate)
        ),
        "years": YEARS,
        "type_columns": TYPE_COLUMNS,
        "scale": reading_scale(),
        "annotators": annotators_with_accuracy(report["annotators"], model_accuracy),
        "model_accuracy": model_accuracy is not None,
        "accuracy_definition": gettext(ACCURACY_DEFINITION),
    }
