"""The REST API: every queryset is scoped by the caller's membership of the project.

A non-member, or a member whose role may not see an endpoint, gets 404 (never 403), as
everywhere else. Annotators see only their own annotations; researchers read final labels,
the annotations of final issues (pseudonymous, as in the exports) and exports.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import django_filters
from django.contrib.auth.models import User
from django.db.models import Case, Exists, F, OuterRef, Prefetch, Q, QuerySet, Value, When
from django.db.models.expressions import Combinable
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from agreement.measures import agreement_report
from agreement.permissions import AGREEMENT_ROLES
from annotator.models import LEAD_ROLES, Membership, Project, Role
from annotator.permissions import membership_or_404
from annotator.pseudonyms import pseudonyms
from dataset.exports import export_path, start_export
from dataset.filters import AnnotationFilter, ResolutionFilter, ScopedFilterSet
from dataset.models import ExportJob
from dataset.permissions import (
    EXPORT_ROLES,
    can_export_everything,
    can_use_real_names,
    visible_exports,
)
from dataset.serializers import (
    AnnotationSerializer,
    ExportJobSerializer,
    ProjectIssueSerializer,
    ProjectSerializer,
    ResolutionSerializer,
)
from labeling.labels import KEY_FIELDS
from labeling.models import Annotation, ProjectIssue, Reservation, Resolution
from lib.inputlimits import row_id
from taxonomy.lineage import Translator


class ApiRoot(APIView):
    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        return Response(
            {
                "projects": reverse("api_projects", request=request),
                "schema": reverse("api_schema", request=request),
                "docs": reverse("api_docs", request=request),
                "token": reverse("api_token", request=request),
            }
        )


def signed_in(request: Request) -> User:
    """The request's user; every endpoint requires one (DEFAULT_PERMISSION_CLASSES)."""
    user = request.user
    assert isinstance(user, User)
    return user


class ProjectScoped(APIView):
    """Looks the project up once per request through `membership_or_404`."""

    roles: tuple | None = None

    def membership(self) -> Membership:
        if not hasattr(self, "_membership"):
            self._membership = membership_or_404(
                self.request.user, self.kwargs["project_id"], roles=self.roles
            )
        return self._membership

    def fake(self) -> bool:
        # drf-spectacular builds querysets without a request user to read the models.
        return getattr(self, "swagger_fake_view", False)


class LabelReading(ProjectScoped, generics.GenericAPIView):
    """A view whose serializers show labels: they get a Translator to the project's version."""

    def get_serializer_context(self) -> dict[str, Any]:
        context = dict(super().get_serializer_context())
        if not self.fake():
            # Labels are shown in the project's current taxonomy version, as exported.
            context["translator"] = Translator(self.membership().project.taxonomy_version)
        return context


class ProjectList(generics.ListAPIView):
    """The projects you are a member of, with your role."""

    serializer_class = ProjectSerializer

    def get_queryset(self) -> QuerySet[Project]:
        if getattr(self, "swagger_fake_view", False):
            return Project.objects.none()
        if self.request.user.is_superuser:
            return Project.objects.select_related("taxonomy_version")
        return Project.objects.filter(memberships__user=signed_in(self.request)).select_related(
            "taxonomy_version"
        )

    def get_serializer_context(self) -> dict[str, Any]:
        context = dict(super().get_serializer_context())
        if not getattr(self, "swagger_fake_view", False):
            context["roles"] = dict(
                Membership.objects.filter(user=signed_in(self.request)).values_list(
                    "project_id", "role"
                )
            )
        return context


class ProjectDetail(ProjectScoped, generics.RetrieveAPIView):
    """One project you are a member of."""

    serializer_class = ProjectSerializer

    def get_object(self) -> Project:
        return self.membership().project

    def get_serializer_context(self) -> dict[str, Any]:
        context = dict(super().get_serializer_context())
        if not self.fake():
            m = self.membership()
            context["roles"] = {m.project_id: m.role}
        return context


class IssueFilter(ScopedFilterSet):
    repository = django_filters.CharFilter(
        method="filter_repository", help_text="repository id or owner/name"
    )
    state = django_filters.CharFilter(field_name="issue__state")
    status = django_filters.ChoiceFilter(
        field_name="shown_status", choices=ProjectIssue.Status.choices
    )
    final_type = django_filters.CharFilter(
        method="filter_final", help_text="type code of the final label, e.g. C"
    )
    theme = django_filters.CharFilter(
        method="filter_final", help_text="theme code of the final label, e.g. C.5"
    )
    created_after = django_filters.DateFilter(
        field_name="issue__created_at", lookup_expr="date__gte"
    )
    created_before = django_filters.DateFilter(
        field_name="issue__created_at", lookup_expr="date__lte"
    )

    class Meta:
        model = ProjectIssue
        fields = ["repository", "state", "status", "final_type", "theme"]

    def filter_repository(
        self, queryset: QuerySet[ProjectIssue], name: str, value: str
    ) -> QuerySet[ProjectIssue]:
        if value.isdigit():
            repository_id = row_id(value)  # None beyond the id column's range: no such row
            if repository_id is None:
                return queryset.none()
            return queryset.filter(issue__repository_id=repository_id)
        owner, _, repo = value.rpartition("/")
        return queryset.filter(issue__repository__owner=owner, issue__repository__name=repo)

    def filter_final(
        self, queryset: QuerySet[ProjectIssue], name: str, value: str
    ) -> QuerySet[ProjectIssue]:
        """Issues whose final label reads as `value` in the project's current version (a
        theme merged away is found under its target, a moved one under its new type)."""
        project = Project.objects.select_related("taxonomy_version").get(
            pk=self.request.parser_context["kwargs"]["project_id"]
        )
        translator = Translator(project.taxonomy_version)
        finals = Resolution.objects.filter(project=project, is_current=True)
        # Few distinct labels however many issues: match them, then filter by them.
        match = Q(pk__in=[])
        for ids in finals.order_by().values_list(*KEY_FIELDS).distinct():
            label = translator.label_from_ids(*ids)
            node = label.issue_type if name == "final_type" else label.theme
            if node is not None and node.code == value:
                match |= Q(**dict(zip(KEY_FIELDS, ids, strict=True)))
        return queryset.filter(issue_id__in=finals.filter(match).values("issue_id"))


class IssueList(LabelReading, generics.ListAPIView):
    """The project's issues in queue order, with the final label once there is one.

    An annotator gets only the issues handed to them (labeled or reserved): the whole queue,
    listed before and after a recall draw, would show which issues are the new probes."""

    serializer_class = ProjectIssueSerializer
    filterset_class = IssueFilter

    def get_queryset(self) -> QuerySet[ProjectIssue]:
        if self.fake():
            return ProjectIssue.objects.none()
        membership = self.membership()
        project = membership.project
        shown: Combinable = F("status")
        if membership.role == Role.ANNOTATOR:
            # "In disagreement" would tell an annotator how others labeled: show it as open.
            shown = Case(
                When(status=ProjectIssue.Status.DISAGREEMENT, then=Value("open")),
                default=F("status"),
            )
        issues = ProjectIssue.objects.filter(project=project)
        if membership.role == Role.ANNOTATOR:
            user_id = membership.user_id
            labeled = Annotation.objects.filter(
                project=project, issue_id=OuterRef("issue_id"), annotator_id=user_id
            )
            handed = Reservation.objects.filter(project_issue=OuterRef("pk"), annotator_id=user_id)
            issues = issues.filter(Exists(labeled) | Exists(handed))
        return (
            issues.annotate(shown_status=shown)
            .select_related("issue__repository")
            .prefetch_related(
                Prefetch(
                    "issue__resolutions",
                    queryset=Resolution.objects.filter(
                        project=project, is_current=True
                    ).select_related("issue_type", "theme", "sub_theme"),
                    to_attr="current_resolutions",
                )
            )
            .order_by("position", "pk")
        )


class AnnotationList(LabelReading, generics.ListAPIView):
    """Annotations under pseudonyms: annotators get their own, researchers final issues'.

    Leads and admins get all of them.
    """

    serializer_class = AnnotationSerializer
    filterset_class = AnnotationFilter

    def get_queryset(self) -> QuerySet[Annotation]:
        if self.fake():
            return Annotation.objects.none()
        membership = self.membership()
        qs = Annotation.objects.filter(project=membership.project)
        if membership.role == Role.ANNOTATOR:
            qs = qs.filter(annotator=signed_in(self.request))
        elif membership.role == Role.RESEARCHER:
            # Researchers read final data only, like the exports they may download.
            qs = qs.filter(
                issue__project_issues__project=membership.project,
                issue__project_issues__status=ProjectIssue.Status.FINAL,
            )
        elif membership.role not in LEAD_ROLES:
            raise Http404
        return qs.select_related("issue", "issue_type", "theme", "sub_theme").order_by(
            "issue_id", "annotator_id", "revision"
        )

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        if not self.fake():
            context["pseudonyms"] = pseudonyms(self.membership().project)
        return context


class ResolutionList(LabelReading, generics.ListAPIView):
    """The current final labels."""

    serializer_class = ResolutionSerializer
    filterset_class = ResolutionFilter

    def get_queryset(self) -> QuerySet[Resolution]:
        if self.fake():
            return Resolution.objects.none()
        return (
            Resolution.objects.filter(project=self.membership().project, is_current=True)
            .select_related("issue", "issue_type", "theme", "sub_theme")
            .order_by("issue_id")
        )


class AgreementView(ProjectScoped):
    """The agreement report (Fleiss, Krippendorff, Cohen, confusions); not for annotators."""

    roles = AGREEMENT_ROLES

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, project_id: int) -> Response:
        return Response(agreement_report(self.membership().project))


class ExportList(ProjectScoped, generics.ListCreateAPIView):
    """Export jobs; POST starts one (a ZIP of every format, built by a worker)."""

    serializer_class = ExportJobSerializer
    roles = EXPORT_ROLES
    filter_backends: list = []

    def get_queryset(self) -> QuerySet[ExportJob]:
        if self.fake():
            return ExportJob.objects.none()
        return visible_exports(self.membership())

    @extend_schema(request=None, responses=ExportJobSerializer)
    def post(self, request: Request, project_id: int) -> Response:
        membership = self.membership()
        # The stubs allow a JSON list body; this view has always read it as a mapping.
        data = cast(Mapping[str, Any], request.data)
        real_names = can_use_real_names(membership) and _flag(data.get("real_names"))
        everything = can_export_everything(membership) and _flag(data.get("everything"))
        job = start_export(
            membership.project, signed_in(request), real_names=real_names, everything=everything
        )
        data = ExportJobSerializer(job, context={"request": request}).data
        return Response(data, status=status.HTTP_201_CREATED)


def _flag(value: object) -> bool:
    """A boolean request field from JSON or a form: "false", "0", "off" are false."""
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "on", "yes")
    return bool(value)


class ExportDetail(ProjectScoped, generics.RetrieveAPIView):
    """One export job: status, progress, SHA-256 and download link when ready."""

    serializer_class = ExportJobSerializer
    roles = EXPORT_ROLES

    def get_object(self) -> ExportJob:
        return get_object_or_404(visible_exports(self.membership()), pk=self.kwargs["pk"])


class ExportDownload(ProjectScoped):
    """The export's ZIP file."""

    roles = EXPORT_ROLES

    @extend_schema(responses={(200, "application/zip"): OpenApiTypes.BINARY})
    def get(self, request: Request, project_id: int, pk: int) -> FileResponse:
        job = get_object_or_404(
            visible_exports(self.membership()), pk=pk, status=ExportJob.Status.DONE
        )
        path = export_path(job)
        if not path.exists():
            raise Http404
        return FileResponse(open(path, "rb"), as_attachment=True, filename=job.filename)
