"""The machine raters API (read-only): the project's raters with their validation figures, as
the page and `manage.py raters --json` show them; leads, admins and researchers only."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from annotator.permissions import membership_or_404
from raters.models import MachineRater
from raters.permissions import VALIDATION_ROLES
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
    for row in report["raters"]:
        row["settings"] = settings[row["name"]]
    return Response(report)
