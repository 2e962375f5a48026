"""The interview stage (section IV): participants, a codebook of quotes, and theme rankings."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class Participant(models.Model):
    class Kind(models.TextChoices):
        USER = "user", _("user")
        DEVELOPER = "developer", _("developer")

    class Experience(models.TextChoices):
        BEGINNER = "beginner", _("beginner")
        EXPERIENCED = "experienced", _("experienced")
        UNKNOWN = "", _("unknown")

    project = models.ForeignKey(
        "annotator.Project", on_delete=models.CASCADE, related_name="interview_participants"
    )
    code = models.CharField(max_length=50, help_text=_("A pseudonym such as U3 or D1."))
    kind = models.CharField(max_length=10, choices=Kind.choices)
    # As written in the codebook ("Beginner (<1 year)"), and the group derived from it.
    experience_text = models.CharField(max_length=200, blank=True)
    experience = models.CharField(max_length=12, choices=Experience.choices, blank=True)

    class Meta:
        verbose_name = _("participant")
        verbose_name_plural = _("participants")
        ordering = ["project", "code"]
        constraints = [
            models.UniqueConstraint(fields=["project", "code"], name="unique_participant_code")
        ]

    def __str__(self) -> str:
        return f"{self.code} ({self.kind})"


class CodebookEntry(models.Model):
    project = models.ForeignKey(
        "annotator.Project", on_delete=models.CASCADE, related_name="codebook_entries"
    )
    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="entries")
    framework_context = models.CharField(max_length=300, blank=True)
    prompt_category = models.CharField(max_length=300, blank=True)
    quote = models.TextField()
    nodes = models.ManyToManyField("taxonomy.TaxonomyNode", blank=True, related_name="+")
    insight = models.TextField(blank=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = _("codebook entry")
        verbose_name_plural = _("codebook entries")
        ordering = ["project", "position", "pk"]

    def __str__(self) -> str:
        return f"{self.participant.code}: {self.quote[:40]}"


class Ranking(models.Model):
    """One participant's order of the themes of one issue type: a top three or a full order."""

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="rankings")
    issue_type = models.ForeignKey(
        "taxonomy.TaxonomyNode", on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("ranking")
        verbose_name_plural = _("rankings")
        constraints = [
            models.UniqueConstraint(
                fields=["participant", "issue_type"], name="one_ranking_per_participant_type"
            )
        ]

    def __str__(self) -> str:
        return f"{self.participant.code} ranks {self.issue_type.code}"


class RankedTheme(models.Model):
    ranking = models.ForeignKey(Ranking, on_delete=models.CASCADE, related_name="items")
    theme = models.ForeignKey("taxonomy.TaxonomyNode", on_delete=models.PROTECT, related_name="+")
    rank = models.PositiveSmallIntegerField(help_text=_("1 is the highest priority."))

    class Meta:
        verbose_name = _("ranked theme")
        verbose_name_plural = _("ranked themes")
        ordering = ["ranking", "rank"]
        constraints = [
            models.UniqueConstraint(fields=["ranking", "rank"], name="unique_rank"),
            models.UniqueConstraint(fields=["ranking", "theme"], name="unique_ranked_theme"),
        ]

    def __str__(self) -> str:
        return f"{self.rank}. {self.theme.code}"
