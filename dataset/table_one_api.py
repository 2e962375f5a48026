"""The Table I API: the same records as the Table I page (`agreement.table_one`), counted by
issue or by published row (`?count=issues|rows`); the false-positive rate is over the
`screened` finals (not imported), and null where there is none."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from agreement.forms import TableOneForm
from agreement.permissions import TABLE_ONE_ROLES
from agreement.table_one import table_one, table_one_records
from dataset.api import ProjectScoped


class TableOne(ProjectScoped):
    """Table I per repository group and the Sum row: issues per year and type, final labels,
    screened finals, false positives and their rate over the screened finals (null where
    there is none: imported finals cannot carry a false-positive mark)."""

    roles = TABLE_ONE_ROLES

    @extend_schema(
        parameters=[OpenApiParameter("count", str, enum=["issues", "rows"])],
        responses=OpenApiTypes.OBJECT,
        summary="Table I",
    )
    def get(self, request, project_id: int):
        project = self.membership().project
        form = TableOneForm(request.query_params)
        if not form.is_valid():
            raise ValidationError(form.errors.get_json_data())
        counting = form.counting()
        return Response(
            {"count": counting, "rows": table_one_records(*table_one(project, counting))}
        )
