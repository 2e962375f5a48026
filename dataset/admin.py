from django.contrib import admin
from django.http import HttpRequest

from dataset.models import ExportJob, Release


@admin.register(ExportJob)
class ExportJobAdmin(admin.ModelAdmin):
    list_display = ["pk", "project", "status", "progress", "requested_by", "created_at", "size"]
    list_filter = ["status", "project"]
    readonly_fields = [f.name for f in ExportJob._meta.fields]


@admin.register(Release)
class ReleaseAdmin(admin.ModelAdmin):
    """Read only: a release is frozen once built (see dataset.releases)."""

    list_display = ["version", "project", "status", "finished_at", "size", "sha256"]
    list_filter = ["status", "project"]
    readonly_fields = [f.name for f in Release._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Release | None = None) -> bool:
        return obj is None or obj.status != Release.Status.DONE
