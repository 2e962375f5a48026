from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User

from annotator.forms import AdminAddUserForm, AdminChangeUserForm
from annotator.models import Annotation, Invite, Membership, Project, ProjectIssue, Resolution


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "taxonomy_version", "annotations_per_issue", "created_at"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "project", "role", "pseudonym"]
    list_filter = ["project", "role"]


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
        "disagreement_level",
        "split",
    ]


@admin.register(Annotation)
class AnnotationAdmin(admin.ModelAdmin):
    list_display = ["issue", "annotator", "revision", "is_current", "label_code", "created_at"]
    list_filter = ["project", "is_current", "is_pilot", "is_false_positive"]
    raw_id_fields = ["issue", "issue_type", "theme", "sub_theme"]

    # Annotations are history: never edited or deleted, a change is a new revision.
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Resolution)
class ResolutionAdmin(admin.ModelAdmin):
    list_display = ["issue", "project", "label_code", "method", "decided_by", "is_current"]
    list_filter = ["project", "method", "is_current"]
    raw_id_fields = ["issue", "issue_type", "theme", "sub_theme"]


@admin.register(Invite)
class InviteAdmin(admin.ModelAdmin):
    list_display = ["project", "role", "email", "created_at", "expires_at", "used_at"]
    readonly_fields = ["token_hash", "used_at", "used_by"]


admin.site.unregister(User)


@admin.register(User)
class AccountAdmin(UserAdmin):
    """Django's user admin under the username rule of every other account (annotator.accounts)."""

    add_form = AdminAddUserForm
    form = AdminChangeUserForm
