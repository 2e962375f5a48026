"""The Table I page (every member; `agreement.table_one` counts it) with, for the roles that
may read machine labels, the estimated shares beside the counts when the project labels a
sample with a machine rater's help (`dataset.table_one_estimates`). The page lives here, not in
`agreement`, because the estimates come from `raters`, which `agreement` may not import."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render

from agreement.permissions import TABLE_ONE_ROLES
from agreement.table_one import COUNT_ISSUES, TYPE_COLUMNS, YEARS, table_one, table_one_records
from annotator.permissions import membership_or_404
from dataset.forms import TableOneEstimateForm
from dataset.table_one_estimates import ESTIMATED_COLUMNS, table_one_estimates, with_estimates
from lib.requests import AuthedRequest
from raters.permissions import VALIDATION_ROLES


def _cells(estimated: dict[str, Any] | None) -> list[dict[str, Any] | None]:
    """A row's estimated columns in Table I's order, in percent, for the template."""
    out: list[dict[str, Any] | None] = []
    for _code, label in ESTIMATED_COLUMNS:
        e = (estimated or {}).get(label)
        out.append(
            None
            if e is None
            else {
                "code": e["code"],
                "share": 100 * e["share"],
                "low": 100 * e["ci_low"],
                "high": 100 * e["ci_high"],
                "sparse": e["sparse"],
            }
        )
    return out


@login_required
def table_one_page(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=TABLE_ONE_ROLES)
    project = membership.project
    may_estimate = membership.role in VALIDATION_ROLES
    form = TableOneEstimateForm(request.GET, project=project, with_rater=may_estimate)
    valid = form.is_valid()
    counting = form.counting() if valid else COUNT_ISSUES
    records = table_one_records(*table_one(project, counting))
    block = None
    if may_estimate and valid:
        block = table_one_estimates(project, form.requested_rater())
    records = [
        {**r, "estimated_cells": _cells(r["estimated"])} for r in with_estimates(records, block)
    ]
    context = {
        "project": project,
        "membership": membership,
        "form": form,
        "counting": counting,
        "rows": records[:-1],
        "total": records[-1],
        "years": YEARS,
        "type_labels": [label for _, label in TYPE_COLUMNS],
        "estimates": block,
    }
    return render(request, "dataset/table_one.html", context, status=200 if valid else 400)
