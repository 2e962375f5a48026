"""Machine raters of a project and the labels they give.

A `MachineRater` is one configured rater (a classifier trained in the project, or an LLM
behind an OpenAI-compatible endpoint; the backends live in `raters.backends`). A
`MachineLabel` is one label it gave one issue, with everything needed to reproduce and judge
it: model and version, the hash of its prompt (for the classifier: of its feature
configuration and training set), parameters, confidence, time, and the raw output with a
`valid` flag (an invalid output is kept and counted, never dropped). Labels are never
overwritten: a new run writes new rows and marks the older ones not current.

Machine labels are blind: no annotator page reads these tables, they never count toward K and
never change what an annotator is served. A lead may enlist a rater (`enlisted`, off by
default): under the adaptive stopping rule its label counts as one vote when its confidence
reaches `confidence_threshold` (no threshold: it never votes), beside at least one human label
(`labeling.stopping`, read by `labeling.resolution.enlisted_machine_vote`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import JSONField, Q, Value
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from labeling.models import LabelFields
from lib import stored_messages
from lib.jobs import Job, JobStatus
from raters import liveness


class MachineRater(models.Model):
    class Kind(models.TextChoices):
        CLASSIFIER = "classifier", _("classifier trained on the project's final labels")
        LLM = "llm", _("LLM (OpenAI-compatible chat completions)")
        # Labels made elsewhere and imported from a file (`raters.imports`); never run here.
        EXTERNAL = "external", _("external: labels imported from a file")

    project = models.ForeignKey(
        "annotator.Project", on_delete=models.CASCADE, related_name="machine_raters"
    )
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    # The classifier's feature and model family, or the LLM's model name.
    model = models.CharField(max_length=200, blank=True)
    # LLM settings (used by the llm backend). The key is never stored: `api_key_env` is the
    # NAME of the environment variable that holds it.
    api_url = models.URLField(max_length=500, blank=True)
    api_key_env = models.CharField(max_length=100, blank=True)
    temperature = models.FloatField(default=0.0)
    samples = models.PositiveSmallIntegerField(default=1)
    max_tokens = models.PositiveIntegerField(default=512)
    seed = models.IntegerField(null=True, blank=True)
    # The llm prompt shows each taxonomy node's example details (what annotators wrote for the
    # study's issues, not linked to issue ids, so they may describe the issue being labeled):
    # off by default, so validation stays out of sample; recorded in parameters and prompt hash.
    prompt_details = models.BooleanField(default=False)
    # The adaptive stopping rule counts an enlisted rater's confident label as one vote.
    enlisted = models.BooleanField(default=False)
    confidence_threshold = models.FloatField(null=True, blank=True)
    # The classifier: retrain (a Celery task) once this many new final labels have arrived.
    retrain_after = models.PositiveIntegerField(default=50)
    trained_on = models.PositiveIntegerField(
        default=0, help_text=_("final issues at last training")
    )
    trained_at = models.DateTimeField(null=True, blank=True)
    version = models.PositiveIntegerField(default=0, help_text=_("incremented on each training"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = _("machine rater")
        verbose_name_plural = _("machine raters")
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="unique_rater_name")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind}) in {self.project}"

    def current_version_labels(self) -> models.QuerySet[MachineLabel]:
        """The current labels its current version gave: a classifier's labels name the
        training they came from (`model_version` "v<version>", `raters.classifier`), so a
        classifier trained again counts none of its older labels; an external rater's labels
        are all of its latest file; an llm rater has one version (its settings never change).
        What validation for enlisting and the alternative annotator test read."""
        labels = MachineLabel.objects.filter(rater=self, is_current=True)
        if self.kind == MachineRater.Kind.CLASSIFIER:
            labels = labels.filter(model_version=f"v{self.version}")
        return labels


class RaterRun(Job):
    """One run of a rater over a project's issues, with progress for the page (`done` of
    `total`). Its lifecycle and claim are `lib.jobs.Job`'s; a failed or stopped run is resumed,
    and a process of this host is taken to be alive for `raters.liveness.ALIVE_STALE_AFTER`."""

    JOB_KIND = "rater-run"
    FAILED_RUNS_AGAIN = True
    STALE_AFTER = liveness.STALE_AFTER
    ALIVE_STALE_AFTER = liveness.ALIVE_STALE_AFTER
    Status = JobStatus

    class Scope(models.TextChoices):
        FINAL = "final", _("final issues")
        OPEN = "open", _("issues not final yet")
        ALL = "all", _("all issues")

    rater = models.ForeignKey(MachineRater, on_delete=models.CASCADE, related_name="runs")
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


class MachineLabel(LabelFields):
    """One machine rater's label on one issue (the label fields as a human's, never shown to
    annotators)."""

    rater = models.ForeignKey(MachineRater, on_delete=models.CASCADE, related_name="labels")
    issue = models.ForeignKey(
        "ingest.Issue", on_delete=models.CASCADE, related_name="machine_labels"
    )
    run = models.ForeignKey(
        RaterRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="labels"
    )
    # False when the output could not be read as a label (kept, and counted as invalid).
    valid = models.BooleanField(default=True)
    raw_output = models.TextField(blank=True)
    model = models.CharField(max_length=200, blank=True)
    model_version = models.CharField(max_length=100, blank=True)
    # The LLM's prompt, or the classifier's feature config and training set, as a SHA-256.
    prompt_hash = models.CharField(max_length=64, blank=True)
    parameters = models.JSONField(default=dict, blank=True)
    confidence = models.FloatField(null=True, blank=True)
    # Cross-fitting: the fold whose model (trained without this issue) gave a final issue's
    # label; None for a label from the model trained on every final issue (open issues).
    fold = models.SmallIntegerField(null=True, blank=True)
    is_current = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = _("machine label")
        verbose_name_plural = _("machine labels")
        ordering = ["rater", "issue", "-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["rater", "issue"],
                condition=Q(is_current=True),
                name="one_current_machine_label",
            )
        ]
        indexes = [models.Index(fields=["rater", "is_current"])]

    def __str__(self) -> str:
        return f"{self.rater.name} on {self.issue_id}: {self.label_code}"


class SampleDraw(models.Model):
    """An active human sample (`raters.sampling`): every issue in scope drawn for human
    labeling with its own inclusion probability from a rater's uncertainty, the draw seeded and
    recorded; the estimates weight the drawn issues by 1/π. A project's latest draw is current."""

    project = models.ForeignKey(
        "annotator.Project", on_delete=models.CASCADE, related_name="sample_draws"
    )
    rater = models.ForeignKey(MachineRater, on_delete=models.CASCADE, related_name="sample_draws")
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
