"""Table I with estimated shares beside its counts (#29), for the page and the API.

When a project labels a random sample of its scope with a machine rater's help, its counts are
of the sample's final issues, and what a paper reports is the shares over the whole scope:
beside each row's counts stand the estimated type shares (false positives included) with their
95 % intervals, `raters.estimates.estimate(project, rater, level="type", by="repository")`,
and the Sum row's are the scope's (`by=None`). Only for the roles that may read machine labels
(`raters.permissions.VALIDATION_ROLES`): an annotator sees the counts alone.

Which rater: the one asked for (`?rater=<id>`), else the enlisted rater with the best alt-test
advantage probability (`raters.reporting.table_one_rater`); none, no estimated columns.
"When a project uses a sample": the rater's human sample (the queue's final prefix) has at least
2 issues and is smaller than the scope; otherwise the block says why (`status` `no_sample`, or
`nothing_to_estimate` once every issue in scope is final: the counts are the shares).

Table I's rows are repository groups (a repository's study group, else its full name) and the
estimates are per repository: a row holding one repository gets that repository's estimates;
a row grouping several gets none (the estimates page gives them per repository), and so does
a repository the sample has reached with fewer than 2 issues. This module sits in `dataset`
because it reads `agreement` (Table I) and `raters` (the estimates), which `agreement` may not.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.utils.translation import gettext_noop

from agreement.table_one import TYPE_COLUMNS
from annotator.models import Project
from labeling.models import MachineRater, ProjectIssue
from lib.refusal import Refusal
from raters.backends import FP_CODE
from raters.estimates import estimate
from raters.reporting import ESTIMATED, NO_SAMPLE, NOTHING_TO_ESTIMATE, table_one_rater

# Table I's type columns (its order) and the false positives' share, keyed by their labels as
# Table I's `types` are (the page translates them).
ESTIMATED_COLUMNS = (*TYPE_COLUMNS, (FP_CODE, gettext_noop("False positive")))
KEPT = ("code", "share", "ci_low", "ci_high", "classical_share", "classical_ci_low",
        "classical_ci_high", "effective_n", "sparse")  # fmt: skip


def _row_key(group: str, owner: str, name: str) -> str:
    return group or f"{owner}/{name}"  # as agreement.table_one names its rows


def _columns(estimates: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    by_code = {row["code"]: row for row in estimates}
    return {
        label: {k: by_code[code][k] for k in KEPT}
        for code, label in ESTIMATED_COLUMNS
        if code in by_code
    }


def table_one_estimates(
    project: Project, requested: MachineRater | None = None
) -> dict[str, Any] | None:
    """The estimated columns of Table I: `None` without a rater, else a block with the rater,
    `status` and, when estimated, the method, the sample, `rows` (row name -> column label ->
    estimate, or None) and `total` (the scope's)."""
    rater = table_one_rater(project, requested)
    if rater is None:
        return None
    block: dict[str, Any] = {
        "rater": rater.name,
        "rater_id": rater.pk,
        "chosen": "requested" if requested is not None else "enlisted",
        "columns": [{"code": code, "label": label} for code, label in ESTIMATED_COLUMNS],
    }
    try:
        overall = estimate(project, rater, level="type").as_json()
    except Refusal as error:
        if error.field != "sample":
            raise
        return {**block, "status": NO_SAMPLE, "note": error.message}
    sample = {k: overall[k] for k in ("n_human", "n_total", "sample")}
    if overall["n_human"] >= overall["n_total"]:
        return {**block, **sample, "status": NOTHING_TO_ESTIMATE}
    by_repository: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in estimate(project, rater, level="type", by="repository").as_json()["estimates"]:
        by_repository[row["by"]].append(row)
    repositories: dict[str, set[str]] = defaultdict(set)
    for group, owner, name in (
        ProjectIssue.objects.filter(project=project)
        .values_list(
            "issue__repository__group", "issue__repository__owner", "issue__repository__name"
        )
        .distinct()
    ):
        repositories[_row_key(group, owner, name)].add(f"{owner}/{name}")
    rows: dict[str, dict[str, Any] | None] = {}
    for key, members in repositories.items():
        (only,) = members if len(members) == 1 else (None,)
        rows[key] = _columns(by_repository[only]) if only in by_repository else None
    return {
        **block,
        **sample,
        "status": ESTIMATED,
        "method": overall["method"],
        "rater_version": overall["rater_version"],
        "several_repositories": sorted(k for k, v in repositories.items() if len(v) > 1),
        "rows": rows,
        "total": _columns(overall["estimates"]),
    }


def summary(block: dict[str, Any] | None) -> dict[str, Any] | None:
    """The block without its per-row columns, which ride on the records (`with_estimates`)."""
    if block is None:
        return None
    return {k: v for k, v in block.items() if k not in ("rows", "total")}


def with_estimates(
    records: list[dict[str, Any]], block: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """Table I's records (`agreement.table_one.table_one_records`, the Sum row last) with each
    row's `estimated` columns (None where there are none)."""
    estimated = block is not None and block["status"] == ESTIMATED
    out = []
    for k, record in enumerate(records):
        columns = None
        if estimated:
            assert block is not None
            last = k == len(records) - 1
            columns = block["total"] if last else block["rows"].get(record["name"])
        out.append({**record, "estimated": columns})
    return out
