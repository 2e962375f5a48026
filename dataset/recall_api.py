"""The filter-recall API: the report (leads, admins, researchers) and, for leads and admins,
a draw of recall probes — the same functions as the recall page and `manage.py filter_recall`.
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from dataset.api import ProjectScoped, signed_in
from dataset.permissions import RECALL_ROLES, can_draw_probes
from dataset.recall import draw_probes, recall_report
from dataset.serializers import RecallDrawSerializer
from lib.refusal import call_with_serializer


class RecallReport(ProjectScoped):
    """The keyword filter's estimated recall: the share of relevant issues among the dropped
    ones and the recall, each as [estimate, low, high] (95 % Wilson), overall and per
    repository, suggested keywords and the draws. POST (leads and admins) draws probes."""

    roles = RECALL_ROLES

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="The filter-recall report")
    def get(self, request: Request, project_id: int) -> Response:
        return Response(recall_report(self.membership().project))

    @extend_schema(
        request=RecallDrawSerializer,
        responses=OpenApiTypes.OBJECT,
        summary="Draw recall probes from the dropped issues",
    )
    def post(self, request: Request, project_id: int) -> Response:
        membership = self.membership()
        if not can_draw_probes(membership):
            raise Http404
        draw = call_with_serializer(
            RecallDrawSerializer(data=request.data),
            lambda data: draw_probes(
                membership.project,
                sample_size=data.get("sample_size"),
                margin=data.get("margin"),
                seed=data.get("seed"),
                drawn_by=signed_in(request),
            ),
        )
        body = {
            "draw": {
                "number": draw.number,
                "seed": draw.seed,
                "size": draw.size,
                "margin": draw.margin,
                "by_repository": draw.by_repository,
            },
            "report": recall_report(membership.project),
        }
        return Response(body, status=status.HTTP_201_CREATED)
