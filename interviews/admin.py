from django.contrib import admin

from interviews.models import CodebookEntry, Participant, RankedTheme, Ranking


@admin.register(Participant)
class ParticipantAdmin(admin.ModelAdmin):
    list_display = ["code", "project", "kind", "experience"]
    list_filter = ["project", "kind", "experience"]


@admin.register(CodebookEntry)
class CodebookEntryAdmin(admin.ModelAdmin):
    list_display = ["__str__", "project", "prompt_category"]
    list_filter = ["project"]
    raw_id_fields = ["nodes"]


class RankedThemeInline(admin.TabularInline):
    model = RankedTheme
    extra = 0
    raw_id_fields = ["theme"]


@admin.register(Ranking)
class RankingAdmin(admin.ModelAdmin):
    list_display = ["__str__", "created_at"]
    raw_id_fields = ["issue_type"]
    inlines = [RankedThemeInline]
