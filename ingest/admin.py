"""Admin: repositories, issues and comments; keyword sets (editable data); sync runs."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from ingest.filtering import refilter_repository
from ingest.forms import RepositoryAdminForm
from ingest.models import Comment, Issue, KeywordSet, PageETag, Repository, SyncRun


@admin.register(Repository)
class RepositoryAdmin(admin.ModelAdmin):
    form = RepositoryAdminForm  # the API URL: a forge's or a listed host (ingest.hosts)
    list_display = ["full_name", "forge", "group", "is_framework", "keyword_set", "last_synced_at"]
    list_filter = ["forge", "is_framework", "group"]
    search_fields = ["owner", "name", "group"]
    actions = ["refilter"]

    @admin.action(description="Re-apply the keyword filter (no refetch)")
    def refilter(self, request: HttpRequest, queryset: QuerySet[Repository]) -> None:
        for repo in queryset:
            counts = refilter_repository(repo)
            self.message_user(request, f"{repo}: {counts}", messages.SUCCESS)


@admin.register(KeywordSet)
class KeywordSetAdmin(admin.ModelAdmin):
    list_display = ["name", "default_for_group", "size", "updated_at"]
    search_fields = ["name", "default_for_group"]

    @admin.display(description="keywords")
    def size(self, obj: KeywordSet) -> int:
        return len(obj.keywords or [])


@admin.register(SyncRun)
class SyncRunAdmin(admin.ModelAdmin):
    list_display = [
        "__str__", "status", "phase", "pages", "requests", "issues_new", "issues_updated",
        "filtered_out", "quota_remaining", "created_at",
    ]  # fmt: skip
    list_filter = ["status", "repository"]
    readonly_fields = [f.name for f in SyncRun._meta.fields]


@admin.register(PageETag)
class PageETagAdmin(admin.ModelAdmin):
    list_display = ["repository", "url", "etag", "updated_at"]
    list_filter = ["repository"]


class CommentInline(admin.TabularInline):
    model = Comment
    extra = 0
    fields = ["author", "created_at", "body"]
    readonly_fields = ["author", "created_at", "body"]


@admin.register(Issue)
class IssueAdmin(admin.ModelAdmin):
    list_display = ["__str__", "title", "state", "filter_status", "created_at"]
    list_filter = ["repository", "state", "filter_status", "is_pull_request"]
    search_fields = ["title", "number", "url"]
    inlines = [CommentInline]


@admin.register(Comment)
class CommentAdmin(admin.ModelAdmin):
    list_display = ["__str__", "author", "created_at"]
    raw_id_fields = ["issue"]
