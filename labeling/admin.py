from django.contrib import admin
from django.http import HttpRequest

from labeling.models import (
    Annotation,
    DetailEntry,
    MachineLabel,
    MachineRater,
    ProjectIssue,
    Proposal,
    ProposalVote,
    Resolution,
)


@admin.register(ProjectIssue)
class ProjectIssueAdmin(admin.ModelAdmin):
    list_display = ["issue", "project", "status", "is_pilot", "position"]
    list_filter = ["project", "status", "is_pilot"]
    raw_id_fields = ["issue"]
    # Kept by the queue and the comparison: an edit here could hide an issue behind
    # annotators' queue frontiers or break the K-slot count. Use the project's setup page.
    readonly_fields = [
        "position",
        "is_pilot",
        "status",
        "annotation_count",
        "last_label_at",
        "disagreement_level",
        "split",
    ]


@admin.register(Annotation)
class AnnotationAdmin(admin.ModelAdmin):
    list_display = ["issue", "annotator", "revision", "is_current", "label_code", "created_at"]
    list_filter = ["project", "is_current", "is_pilot", "is_false_positive"]
    raw_id_fields = ["issue", "issue_type", "theme", "sub_theme"]

    # Annotations are history: never edited or deleted, a change is a new revision.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Annotation | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Annotation | None = None) -> bool:
        return False


@admin.register(Resolution)
class ResolutionAdmin(admin.ModelAdmin):
    list_display = ["issue", "project", "label_code", "method", "decided_by", "is_current"]
    list_filter = ["project", "method", "is_current"]
    raw_id_fields = ["issue", "issue_type", "theme", "sub_theme"]


class ProposalVoteInline(admin.TabularInline):
    model = ProposalVote
    extra = 0


@admin.register(Proposal)
class ProposalAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "parent", "status", "created_at"]
    list_filter = ["status", "project"]
    raw_id_fields = ["parent", "created_node", "source_annotation"]
    inlines = [ProposalVoteInline]


@admin.register(DetailEntry)
class DetailEntryAdmin(admin.ModelAdmin):
    list_display = ["__str__", "project", "merged_into"]
    raw_id_fields = ["annotation", "node", "merged_into"]


@admin.register(MachineRater)
class MachineRaterAdmin(admin.ModelAdmin):
    list_display = ("name", "project", "kind", "model", "version", "enlisted")
    list_filter = ("kind", "enlisted")


@admin.register(MachineLabel)
class MachineLabelAdmin(admin.ModelAdmin):
    list_display = ("rater", "issue", "valid", "confidence", "is_current", "created_at")
    list_filter = ("valid", "is_current")
    raw_id_fields = ("issue", "run", "issue_type", "theme", "sub_theme")
