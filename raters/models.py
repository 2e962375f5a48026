"""The runs of a project's machine raters, and the active human samples drawn from them.

The raters themselves and their labels (`MachineRater`, `MachineLabel`) live in
`labeling.models`, beside the human labels: the adaptive stopping rule there counts an
enlisted rater's vote (`MachineLabel.objects.enlisted_votes`), and one app owns that rule.
This app makes the labels: a `RaterRun` is one run of a rater over a project's issues (the
backends in `raters.backends`); a `SampleDraw` is an active human sample drawn from a rater's
uncertainty (`raters.sampling`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import JSONField, Q, Value
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from lib import stored_messages
from lib.jobs import Job, JobStatus
from raters import liveness

# A run's task, by its Celery name (raters.tasks), its `TASK`: queued through the outbox by
# `raters.runs` and by the sweep of jobs whose worker is gone (`annotator.jobsweep`).
RUN_TASK = "raters.tasks.run_rater_task"


class RaterRun(Job):
    """One run of a rater over a project's issues, with progress for the page (`done` of
    `total`). Its lifecycle and claim are `lib.jobs.Job`'s; a failed or stopped run is resumed,
    and a process of this host is taken to be alive for `raters.liveness.ALIVE_STALE_AFTER`."""

    JOB_KIND = "rater-run"
    TASK = RUN_TASK
    FAILED_RUNS_AGAIN = True
    ALIVE_STALE_AFTER = liveness.ALIVE_STALE_AFTER
    Status = JobStatus

    def runs_again(self) -> bool:
        """A failed run is resumed, unless a newer run of its rater replaced it (`begin_run`
        ends a stale run failed and starts another): a delivery of the old one that comes
        later (the job sweep's, a lost worker's message) does nothing, so two runs of one
        rater never overlap and older labels never follow newer ones."""
        return super().runs_again() and not (
            type(self)._base_manager.filter(rater_id=self.rater_id, pk__gt=self.pk).exists()
        )

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
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    invalid = models.PositiveIntegerField(default=0)
    # Tokens the model endpoint counted (usage), summed over the run's requests (llm raters).
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
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
    created_at = models.DateTimeField(default=timezone.now)
    # Not in its table: its progress is `done` of `total` (`percent`). None leaves an abstract
    # field out (Django); the stubs type the name as the field's value, hence `Any`.
    step: Any = None
    progress: Any = None

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

    def claim_values(self, now: datetime) -> dict[str, Any]:
        """A resumed run keeps its first start."""
        return {**super().claim_values(now), "started_at": self.started_at or now}


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
