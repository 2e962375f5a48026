"""API representations. Annotators appear only under pseudonyms."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from django.utils.translation import gettext
from rest_framework import serializers

from annotator.models import Project
from annotator.pseudonyms import unnamed
from dataset.exports import cell_code
from dataset.models import ExportJob, Release
from labeling.models import Annotation, ProjectIssue, Resolution
from taxonomy.lineage import LabelInVersion
from taxonomy.models import TaxonomyNode


def _code(node: TaxonomyNode | None) -> str | None:
    return node.code if node is not None else None


def read_label(obj: Annotation | Resolution, context: Mapping[str, Any]) -> LabelInVersion:
    """The label under the project's current version (the `translator` in the context), as
    the exports write it; as stored when there is no translator."""
    translator = context.get("translator")
    if translator is not None:
        return translator.label(obj)
    original = obj.sub_theme or obj.theme or obj.issue_type
    return LabelInVersion(obj.issue_type, obj.theme, obj.sub_theme, obj.is_false_positive, original)


class ProjectSerializer(serializers.ModelSerializer):
    taxonomy_version: serializers.StringRelatedField = serializers.StringRelatedField()
    role = serializers.SerializerMethodField()

    class Meta:
        model = Project
        fields = ["id", "name", "description", "taxonomy_version", "annotations_per_issue", "role"]

    def get_role(self, project: Project) -> str | None:
        return self.context.get("roles", {}).get(project.pk)


class LabelSerializer(serializers.Serializer):
    """The label fields shared by annotations and resolutions, as codes of the project's
    current taxonomy version (read through the lineage), with the code it was made with."""

    code = serializers.SerializerMethodField()
    type = serializers.SerializerMethodField()
    theme = serializers.SerializerMethodField()
    sub_theme = serializers.SerializerMethodField()
    is_false_positive = serializers.BooleanField()
    false_positive_reason = serializers.CharField()
    original_code = serializers.SerializerMethodField()
    in_current_version = serializers.SerializerMethodField()

    def _label(self, obj: Annotation | Resolution) -> LabelInVersion:
        # One read per object, though several fields ask for it.
        # The context dict is shared by the nested serializers of one response, so the cache
        # is too (DRF types it as a read-only Mapping).
        cache = cast(dict[str, Any], self.context).setdefault("_labels", {})
        key = (type(obj).__name__, obj.pk)
        if key not in cache:
            cache[key] = read_label(obj, self.context)
        return cache[key]

    def get_code(self, obj: Annotation | Resolution) -> str:
        return cell_code(self._label(obj))

    def get_type(self, obj: Annotation | Resolution) -> str | None:
        return _code(self._label(obj).issue_type)

    def get_theme(self, obj: Annotation | Resolution) -> str | None:
        return _code(self._label(obj).theme)

    def get_sub_theme(self, obj: Annotation | Resolution) -> str | None:
        return _code(self._label(obj).sub_theme)

    def get_original_code(self, obj: Annotation | Resolution) -> str:
        return self._label(obj).original_code

    def get_in_current_version(self, obj: Annotation | Resolution) -> bool:
        return not self._label(obj).unmapped


class ProjectIssueSerializer(serializers.ModelSerializer):
    id = serializers.IntegerField(source="issue.id")
    url = serializers.CharField(source="issue.url")
    repository = serializers.CharField(source="issue.repository.full_name")
    forge = serializers.CharField(source="issue.repository.forge")
    number = serializers.CharField(source="issue.number")
    title = serializers.CharField(source="issue.title")
    state = serializers.CharField(source="issue.state")
    created_at = serializers.DateTimeField(source="issue.created_at")
    status = serializers.CharField(source="shown_status")
    final = serializers.SerializerMethodField()

    class Meta:
        model = ProjectIssue
        fields = [
            "id",
            "url",
            "repository",
            "forge",
            "number",
            "title",
            "state",
            "created_at",
            "status",
            "final",
        ]

    def get_final(self, obj: ProjectIssue) -> dict | None:
        current = getattr(obj.issue, "current_resolutions", [])
        return LabelSerializer(current[0], context=self.context).data if current else None


class AnnotationSerializer(LabelSerializer, serializers.ModelSerializer):
    issue_url = serializers.CharField(source="issue.url")
    annotator = serializers.SerializerMethodField()
    is_mine = serializers.SerializerMethodField()

    class Meta:
        model = Annotation
        fields = [
            "id",
            "issue",
            "issue_url",
            "annotator",
            "is_mine",
            "revision",
            "is_current",
            "code",
            "type",
            "theme",
            "sub_theme",
            "is_false_positive",
            "false_positive_reason",
            "original_code",
            "in_current_version",
            "summary",
            "created_at",
        ]

    def get_annotator(self, obj: Annotation) -> str:
        return self.context["pseudonyms"].get(obj.annotator_id) or unnamed(obj.annotator_id)

    def get_is_mine(self, obj: Annotation) -> bool:
        return obj.annotator_id == self.context["request"].user.pk


class ResolutionSerializer(LabelSerializer, serializers.ModelSerializer):
    issue_url = serializers.CharField(source="issue.url")

    class Meta:
        model = Resolution
        fields = [
            "id",
            "issue",
            "issue_url",
            "code",
            "type",
            "theme",
            "sub_theme",
            "is_false_positive",
            "false_positive_reason",
            "original_code",
            "in_current_version",
            "method",
            "decided_at",
        ]


class ExportJobSerializer(serializers.ModelSerializer):
    download_url = serializers.SerializerMethodField()

    class Meta:
        model = ExportJob
        fields = [
            "id",
            "status",
            "progress",
            "step",
            "error",
            "real_names",
            "everything",
            "size",
            "sha256",
            "created_at",
            "finished_at",
            "download_url",
        ]
        read_only_fields = fields

    def get_download_url(self, job: ExportJob) -> str | None:
        if job.status != ExportJob.Status.DONE:
            return None
        from django.urls import reverse

        return self.context["request"].build_absolute_uri(
            reverse("api_export_download", args=[job.project_id, job.pk])
        )


class ReleaseSerializer(serializers.ModelSerializer):
    taxonomy_version: serializers.StringRelatedField = serializers.StringRelatedField()
    citation_complete = serializers.SerializerMethodField()
    authors = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()
    # The API's name for when it was released (the job's `finished_at`).
    built_at = serializers.DateTimeField(source="finished_at", read_only=True)
    files = serializers.SerializerMethodField()
    download_url = serializers.SerializerMethodField()

    class Meta:
        model = Release
        fields = [
            "id",
            "version",
            "note",
            "title",
            "authors",
            "licence",
            "citation_complete",
            "status",
            "progress",
            "step",
            "error",
            "created_at",
            "built_at",
            "taxonomy_version",
            "counts",
            "agreement",
            "size",
            "sha256",
            "files",
            "download_url",
        ]
        read_only_fields = fields

    def get_authors(self, release: Release) -> list[str]:
        return [line for line in release.authors.splitlines() if line.strip()]

    def get_citation_complete(self, release: Release) -> bool:
        from dataset.releases import citation_complete

        return citation_complete(release)

    def get_progress(self, release: Release) -> int:
        from dataset.releases import progress_of

        return progress_of(release)[0]

    def get_files(self, release: Release) -> list[dict[str, Any]]:
        """Every file of the ZIP with its SHA-256 and size (its manifest)."""
        return list(release.manifest.get("files", [])) if release.manifest else []

    def get_download_url(self, release: Release) -> str | None:
        if release.status != Release.Status.DONE:
            return None
        from django.urls import reverse

        return self.context["request"].build_absolute_uri(
            reverse("api_release_download", args=[release.project_id, release.pk])
        )


class ReleaseCreateSerializer(serializers.Serializer):
    version = serializers.CharField(max_length=40, help_text="semantic version X.Y.Z")
    note = serializers.CharField(required=False, allow_blank=True, max_length=20000, default="")
    title = serializers.CharField(
        required=False, max_length=300, help_text="the dataset's title; default the project's"
    )
    authors = serializers.ListField(
        child=serializers.CharField(max_length=500),
        required=False,
        max_length=500,
        help_text='"Family, Given[, ORCID]" or "Organisation[, ORCID]" each; default the '
        "project's; an empty list leaves the citation incomplete",
    )
    licence = serializers.CharField(
        required=False, max_length=100, help_text="SPDX identifier; default the project's"
    )

    def validate_authors(self, value: list[str]) -> str:
        # One author per line, as the page's form and the model keep them.
        if any("\n" in a or "\r" in a for a in value):
            raise serializers.ValidationError(gettext("one author per item, without line breaks"))
        return "\n".join(value)


class RecallDrawSerializer(serializers.Serializer):
    """A draw of recall probes (dataset.recall.draw_probes): a size or a margin, and a seed."""

    sample_size = serializers.IntegerField(
        required=False, min_value=1, help_text="how many dropped issues to draw"
    )
    margin = serializers.FloatField(
        required=False,
        min_value=0.005,
        max_value=0.5,
        help_text="or: the margin of error wanted on the share (0.05 = ±5 points at 95 %)",
    )
    seed = serializers.IntegerField(
        required=False, min_value=0, help_text="seed of the draw; a random one when left out"
    )
