from django.contrib import admin

from raters.models import RaterRun


@admin.register(RaterRun)
class RaterRunAdmin(admin.ModelAdmin):
    list_display = ("rater", "only", "status", "done", "total", "created_at")
