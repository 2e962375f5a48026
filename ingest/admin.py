from django.contrib import admin

from ingest.models import Comment, Issue, Repository


@admin.register(Repository)
class RepositoryAdmin(admin.ModelAdmin):
    list_display = ["full_name", "forge", "group", "is_framework", "api_url"]
    list_filter = ["forge", "is_framework", "group"]
    search_fields = ["owner", "name", "group"]


class CommentInline(admin.TabularInline):
    model = Comment
    extra = 0
    fields = ["author", "created_at", "body"]
    readonly_fields = fields


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
