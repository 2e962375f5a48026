"""The Table I API: the same records as the Table I page (`agreement.table_one`), counted by
issue or by published row (`?count=issues|rows`); the false-positive rate is over the
`screened` finals (not imported), and null where there is none. For leads, admins and
researchers, `estimates` (the machine rater, its human sample and the method, or why nothing is
estimated; null without a rater) and each row's `estimated` type shares with 95 % intervals
(`dataset.table_one_estimates`; `?rater=<id>` picks the rater)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from agreement.permissions import TABLE_ONE_ROLES
from agreement.table_one import table_one, table_one_records
from dataset.api import ProjectScoped
from dataset.forms import TableOneEstimateForm
from dataset.table_one_estimates import summary, table_one_estimates, with_estimates
from raters.permissions import VALIDATION_ROLES


class TableOne(ProjectScoped):
    """Table I per repository group and the Sum row: issues per year and type, final labels,
    screened finals, false positives and their rate over the screened finals (null where
    there is none: imported finals cannot carry a false-positive mark); with a machine rater
    and a human sample smaller than the scope, the estimated type shares beside the counts."""

    roles = TABLE_ONE_ROLES

    @extend_schema(
        parameters=[
            OpenApiParameter("count", str, enum=["issues", "rows"]),
            OpenApiParameter("rater", int, description="machine rater id (estimated columns)"),
        ],
        responses=OpenApiTypes.OBJECT,
        summary="Table I",
    )
    def get(self, request: Request, project_id: int) -> Response:
        membership = self.membership()
        project = membership.project
        may_estimate = membership.role in VALIDATION_ROLES
        form = TableOneEstimateForm(request.query_params, project=project, with_rater=may_estimate)
        if not form.is_valid():
            raise ValidationError(form.errors.get_json_data())
        counting = form.counting()
        block = table_one_estimates(project, form.requested_rater()) if may_estimate else None
        records = with_estimates(table_one_records(*table_one(project, counting)), block)
        return Response({"count": counting, "estimates": summary(block), "rows": records})
