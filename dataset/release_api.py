"""The releases API: list (and, for leads and admins, create), detail and download.

Scoped by membership like the rest of the API: a non-member, an annotator, or a researcher
asking to create gets 404.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response

from dataset.api import ProjectScoped, signed_in
from dataset.models import Release
from dataset.permissions import RELEASE_ROLES, can_create_release
from dataset.releases import start_release, version_key
from dataset.serializers import ReleaseCreateSerializer, ReleaseSerializer
from lib.refusal import call_with_serializer


class ReleaseList(ProjectScoped, generics.ListAPIView):
    """The project's releases, newest version first; POST (leads and admins) freezes one."""

    serializer_class = ReleaseSerializer
    roles = RELEASE_ROLES
    filter_backends: list = []
    pagination_class = None

    def get_queryset(self) -> QuerySet[Release]:
        if self.fake():
            return Release.objects.none()
        return Release.objects.filter(project=self.membership().project).select_related(
            "taxonomy_version"
        )

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        releases = sorted(
            self.get_queryset(),
            key=lambda r: (r.status != Release.Status.FAILED, version_key(r)),
            reverse=True,
        )
        return Response(self.get_serializer(releases, many=True).data)

    @extend_schema(request=ReleaseCreateSerializer, responses=ReleaseSerializer)
    def post(self, request: Request, project_id: int) -> Response:
        membership = self.membership()
        if not can_create_release(membership):
            raise Http404
        release = call_with_serializer(
            ReleaseCreateSerializer(data=request.data),
            lambda data: start_release(
                membership.project,
                signed_in(request),
                data["version"],
                data.get("note", ""),
                # Left out: the project's (`citation_defaults`); [] or "": no author.
                title=data.get("title"),
                authors=data.get("authors"),
                licence=data.get("licence"),
            ),
        )
        body = ReleaseSerializer(release, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED)


class ReleaseDetail(ProjectScoped, generics.RetrieveAPIView):
    """One release: status, counts, agreement figures, files with SHA-256, download link."""

    serializer_class = ReleaseSerializer
    roles = RELEASE_ROLES

    def get_object(self) -> Release:
        return get_object_or_404(
            Release.objects.select_related("taxonomy_version"),
            project=self.membership().project,
            pk=self.kwargs["pk"],
        )


class ReleaseDownload(ProjectScoped):
    """The release's ZIP file."""

    roles = RELEASE_ROLES

    @extend_schema(responses={(200, "application/zip"): OpenApiTypes.BINARY})
    def get(self, request: Request, project_id: int, pk: int) -> FileResponse:
        from dataset.releases import release_path

        release = get_object_or_404(
            Release, project=self.membership().project, pk=pk, status=Release.Status.DONE
        )
        path = release_path(release)
        if not path.exists():
            raise Http404
        return FileResponse(open(path, "rb"), as_attachment=True, filename=release.filename)
