from django.contrib import admin

from raters.models import MachineLabel, MachineRater, RaterRun


@admin.register(MachineRater)
class MachineRaterAdmin(admin.ModelAdmin):
    list_display = ("name", "project", "kind", "model", "version", "enlisted")
    list_filter = ("kind", "enlisted")


@admin.register(RaterRun)
class RaterRunAdmin(admin.ModelAdmin):
    list_display = ("rater", "only", "status", "done", "total", "created_at")


@admin.register(MachineLabel)
class MachineLabelAdmin(admin.ModelAdmin):
    list_display = ("rater", "issue", "valid", "confidence", "is_current", "created_at")
    list_filter = ("valid", "is_current")
    raw_id_fields = ("issue", "run", "issue_type", "theme", "sub_theme")
