from django.contrib import admin

from dataset.models import ExportJob


@admin.register(ExportJob)
class ExportJobAdmin(admin.ModelAdmin):
    list_display = ["pk", "project", "status", "progress", "requested_by", "created_at", "size"]
    list_filter = ["status", "project"]
    readonly_fields = [f.name for f in ExportJob._meta.fields]
