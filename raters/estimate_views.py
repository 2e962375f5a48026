"""The estimates page and API: each code's share with a machine rater's help (PPI++) beside
the human sample alone, for researchers and leads (`raters.estimates.estimate`)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from annotator.models import Project
from annotator.permissions import membership_or_404
from labeling.models import MachineRater
from lib.refusal import Refusal, add_to_form
from lib.requests import AuthedRequest
from raters.estimates import Estimates, estimate
from raters.forms import EstimateForm
from raters.permissions import VALIDATION_ROLES

# The interval plot's geometry (SVG user units).
ROW, LEFT, RIGHT, TOP = 26, 150, 640, 24


def _run(form: EstimateForm, project: Project) -> Estimates:
    data = form.cleaned_data
    return estimate(
        project,
        data["rater"],
        level=data["level"] or "type",
        by=data["by"] or None,
        replay=data["replay_sample"],
        seed=data["seed"] or 0,
        plan_half_width=data["plan"],
    )


def interval_chart(report: dict) -> dict[str, Any]:
    """Each estimate as two horizontal intervals on a 0-100 % axis: PPI++ above, the human
    sample alone below (a forest plot; the table beside it carries the same numbers)."""
    rows = []
    for k, row in enumerate(report["estimates"]):
        y = TOP + k * ROW

        def x(value: float) -> float:
            return round(LEFT + value * (RIGHT - LEFT), 1)

        rows.append(
            {
                "label": f"{row['by']} · {row['code']}" if row["by"] else row["code"],
                "y": y,
                "ppi": (x(row["ci_low"]), x(row["ci_high"]), x(row["share"])),
                "classical": (
                    x(row["classical_ci_low"]),
                    x(row["classical_ci_high"]),
                    x(row["classical_share"]),
                ),
            }
        )
    height = TOP + len(rows) * ROW + 30
    ticks = [{"x": LEFT + t / 100 * (RIGHT - LEFT), "value": t} for t in range(0, 101, 20)]
    return {"rows": rows, "height": height, "bottom": height - 24, "ticks": ticks,
            "left": LEFT, "right": RIGHT}  # fmt: skip


@login_required
def estimates_page(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=VALIDATION_ROLES)
    project = membership.project
    form = EstimateForm(request.GET or None, project=project)
    context: dict[str, Any] = {"project": project, "form": form}
    status = 200
    if not MachineRater.objects.filter(project=project).exists():
        context["no_raters"] = True
    elif form.is_bound:
        if form.is_valid():
            try:
                report = _run(form, project).as_json()
            except Refusal as error:
                add_to_form(form, error)
                status = 400
            else:
                context["report"] = report
                context["chart"] = interval_chart(report)
        else:
            status = 400
    return render(request, "raters/estimates.html", context, status=status)


@extend_schema(
    responses=OpenApiTypes.OBJECT,
    summary="Shares of codes estimated with a machine rater (PPI++) and from humans alone",
)
@api_view(["GET"])
def estimates_api(request: Request, project_id: int) -> Response:
    project = membership_or_404(request.user, project_id, roles=VALIDATION_ROLES).project
    form = EstimateForm(request.query_params, project=project)
    if not form.is_valid():
        return Response({"errors": form.errors.get_json_data()}, status=400)
    try:
        return Response(_run(form, project).as_json())
    except Refusal as error:
        return Response({"errors": {error.field: [{"message": error.message}]}}, status=400)
