"""The runs of a project's machine raters, and the active human samples drawn from them.

The raters themselves and their labels (`MachineRater`, `MachineLabel`) live in
`labeling.models`, beside the human labels: the adaptive stopping rule there counts an
enlisted rater's vote (`MachineLabel.objects.enlisted_votes`), and one app owns that rule.
This app makes the labels: a `RaterRun` is one run of a rater over a project's issues (the
backends in `raters.backends`); a `SampleDraw` is an active human sample drawn from a rater's
uncertainty (`raters.sampling`).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import JSONField, Q, Value
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from lib import stored_messages
from raters import liveness


class RaterRun(models.Model):
    """One run of a rater over a project's issues, with progress for the page."""

    class Status(models.TextChoices):
        PENDING = "pending", _("queued")
        RUNNING = "running", _("running")
        DONE = "done", _("done")
        FAILED = "failed", _("failed")

    class Scope(models.TextChoices):
        FINAL = "final", _("final issues")
        OPEN = "open", _("issues not final yet")
        ALL = "all", _("all issues")

    # The rater (`labeling.models.MachineRater`), named by its label so that this module
    # re-exports nothing of labeling: import the rater and its labels from there.
    rater = models.ForeignKey(
        "labeling.MachineRater", on_delete=models.CASCADE, related_name="runs"
    )
    only = models.CharField(max_length=10, choices=Scope.choices, default=Scope.ALL)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    invalid = models.PositiveIntegerField(default=0)
    # Tokens the model endpoint counted (usage), summed over the run's requests (llm raters).
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    error = models.TextField(blank=True)
    # What the llm endpoint was found to accept and say (`raters.llm`): the form of structured
    # output the run used (`raters.prompt.FORMATS`), the model its answers named, where the
    # labels' confidence comes from ("logprobs", "samples" or "none"), and the probe's notes
    # (the forms refused and how, the models listed, why the confidence source).
    # Database defaults throughout: the previous release's code creates runs without these
    # columns while web hosts are upgraded one at a time (docs/OPERATIONS.md).
    output_format = models.CharField(max_length=30, blank=True, db_default="")
    served_model = models.CharField(max_length=200, blank=True, db_default="")
    confidence_from = models.CharField(max_length=20, blank=True, db_default="")
    endpoint = models.JSONField(default=dict, blank=True, db_default=Value({}, JSONField()))
    # Who runs it ("host:pid") and when it was last heard of (`raters.liveness`): a run left
    # `running` by a killed process is stale, and resumable.
    worker = models.CharField(max_length=200, blank=True, db_default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("rater run")
        verbose_name_plural = _("rater runs")
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.rater.name}: {self.status} {self.done}/{self.total}"

    @property
    def error_shown(self) -> str:
        """The run's error in the reader's language (`lib.stored_messages`)."""
        return stored_messages.shown(self.error)

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 0

    @property
    def stale(self) -> bool:
        """Left `running` by a process that stopped (`raters.liveness`): resumable."""
        return liveness.stale(self)


class SampleDraw(models.Model):
    """An active human sample (`raters.sampling`): every issue in scope drawn for human
    labeling with its own inclusion probability from a rater's uncertainty, the draw seeded and
    recorded; the estimates weight the drawn issues by 1/π. A project's latest draw is current."""

    project = models.ForeignKey(
        "annotator.Project", on_delete=models.CASCADE, related_name="sample_draws"
    )
    rater = models.ForeignKey(
        "labeling.MachineRater", on_delete=models.CASCADE, related_name="sample_draws"
    )
    rater_version = models.PositiveIntegerField()
    budget = models.PositiveIntegerField(help_text=_("expected number of drawn issues"))
    uniform_share = models.FloatField(help_text=_("share of the budget spread uniformly"))
    seed = models.IntegerField()
    drawn = models.PositiveIntegerField(default=0)
    is_current = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = _("active sample draw")
        verbose_name_plural = _("active sample draws")
        ordering = ["project", "-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["project"], condition=Q(is_current=True), name="one_current_sample_draw"
            )
        ]

    def __str__(self) -> str:
        return f"draw {self.seed} of {self.budget} by {self.rater.name} in {self.project}"


class SampleInclusion(models.Model):
    """One issue's inclusion probability in a draw, the confidence it came from, and whether
    the issue was drawn."""

    draw = models.ForeignKey(SampleDraw, on_delete=models.CASCADE, related_name="inclusions")
    issue = models.ForeignKey("ingest.Issue", on_delete=models.CASCADE, related_name="+")
    probability = models.FloatField()
    confidence = models.FloatField(null=True, blank=True)
    drawn = models.BooleanField()

    class Meta:
        verbose_name = _("inclusion probability")
        verbose_name_plural = _("inclusion probabilities")
        constraints = [
            models.UniqueConstraint(fields=["draw", "issue"], name="one_inclusion_per_issue")
        ]
        indexes = [models.Index(fields=["draw", "drawn"])]

    def __str__(self) -> str:
        return f"{self.issue_id}: {self.probability:.4f}{' drawn' if self.drawn else ''}"
