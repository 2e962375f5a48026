"""The machine raters API: the project's raters with their validation figures, as the page and
`manage.py raters --json` show them (leads, admins and researchers), and enlisting a rater in
the adaptive stopping rule (leads and admins; `raters.enlisting`, as the page and
`manage.py enlist_rater`)."""

from __future__ import annotations

from collections.abc import Mapping

from django.shortcuts import get_object_or_404
from django.utils.translation import gettext
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from annotator.permissions import membership_or_404
from labeling.models import MachineRater
from lib.refusal import Refusal, add_to_form
from raters.enlisting import current_validation, current_validations, enlist, rule_ignores
from raters.forms import EnlistForm
from raters.permissions import RUN_ROLES, VALIDATION_ROLES
from raters.validation import validation_report


@extend_schema(responses=OpenApiTypes.OBJECT, summary="Machine raters and their validation")
@api_view(["GET"])
def raters_api(request: Request, project_id: int) -> Response:
    project = membership_or_404(request.user, project_id, roles=VALIDATION_ROLES).project
    report = validation_report(project)
    settings = {
        r.name: {
            "model": r.model,
            "version": r.version,
            "trained_on": r.trained_on,
            "enlisted": r.enlisted,
            "temperature": r.temperature,
            "samples": r.samples,
            "prompt_details": r.prompt_details,
        }
        for r in MachineRater.objects.filter(project=project)
    }
    validations = current_validations(project)
    ids = dict(MachineRater.objects.filter(project=project).values_list("name", "pk"))
    for row in report["raters"]:
        row["settings"] = settings[row["name"]]
        # What enlisting rests on: the rater's current version's figures, or None (refused).
        row["current_validation"] = validations[ids[row["name"]]]
    report["stopping_rule_uses_enlisted"] = not rule_ignores(project)
    return Response(report)


@extend_schema(
    request=OpenApiTypes.OBJECT,
    responses=OpenApiTypes.OBJECT,
    summary="Enlist a machine rater in the adaptive stopping rule, or take it back",
)
@api_view(["POST"])
def rater_enlist_api(request: Request, project_id: int, rater_id: int) -> Response:
    """`{"enlisted": true, "confidence_threshold": 0.8}`; a rater without a current validation
    is refused (400 naming `enlisted`). The answer says whether the project's rule uses it."""
    project = membership_or_404(request.user, project_id, roles=RUN_ROLES).project
    rater = get_object_or_404(MachineRater, pk=rater_id, project=project)
    if not isinstance(request.data, Mapping):
        return Response(
            {"non_field_errors": [gettext("a JSON object with enlisted and confidence_threshold")]},
            status=status.HTTP_400_BAD_REQUEST,
        )
    form = EnlistForm(request.data)
    if form.is_valid():
        try:
            enlist(rater, form.cleaned_data["enlisted"], form.cleaned_data["confidence_threshold"])
        except Refusal as exc:
            add_to_form(form, exc)
    if form.errors:
        errors = {field: [str(e) for e in messages] for field, messages in form.errors.items()}
        return Response(errors, status=status.HTTP_400_BAD_REQUEST)
    return Response(
        {
            "name": rater.name,
            "enlisted": rater.enlisted,
            "confidence_threshold": rater.confidence_threshold,
            "current_validation": current_validation(rater),
            "stopping_rule_uses_it": rater.enlisted and not rule_ignores(project),
        }
    )
