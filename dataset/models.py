"""Export jobs: a ZIP of the dataset built in the background, with progress and a download."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import JSONField, Value
from django.utils import translation
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from lib import stored_messages
from lib.jobs import Job

# The jobs' tasks, by their Celery names (dataset.tasks), each its job's `TASK`: a service
# queues a job through `annotator.outbox.enqueue(job.TASK, job.task_args())`, and so does the
# sweep of jobs whose worker is gone (`annotator.jobsweep`); neither imports Celery.
EXPORT_TASK = "dataset.tasks.run_export"
UPLOAD_TASK = "dataset.tasks.run_upload"
RELEASE_TASK = "dataset.tasks.run_release"
RANKING_TASK = "dataset.tasks.run_ranking"


class ExportJob(Job):
    """A ZIP of the dataset (`dataset.exports`); its lifecycle and claim are `lib.jobs.Job`'s."""

    JOB_KIND = "export"
    TASK = EXPORT_TASK
    FAILED_RUNS_AGAIN = True  # the same export asked again once the fault is mended

    class Status(models.TextChoices):
        PENDING = "pending", _("queued")
        RUNNING = "running", _("running")
        DONE = "done", _("ready")
        FAILED = "failed", _("failed")

    project = models.ForeignKey(
        "annotator.Project", on_delete=models.CASCADE, related_name="export_jobs"
    )
    # Annotators appear under their pseudonyms unless an admin asks for real names.
    real_names = models.BooleanField(default=False)
    # Final issues only (what the API shows a researcher) unless a lead or admin asks for every
    # issue; the study CSVs then carry a Status column.
    everything = models.BooleanField(default=False)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    # Relative to settings.EXPORT_ROOT; never a user-supplied path.
    file_path = models.CharField(max_length=300, blank=True)
    size = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)

    class Meta:
        verbose_name = _("export job")
        verbose_name_plural = _("export jobs")
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"export {self.pk} of {self.project} ({self.status})"

    @property
    def filename(self) -> str:
        return f"export-{self.project_id}-{self.pk}.zip"


UPLOAD_FIGURE_LABELS = {
    "issues": _("Issues"),
    "new_issues": _("New issues"),
    "updated_issues": _("Issues already stored (updated)"),
    "kept_issues": _("Issues already stored elsewhere (existing, kept as they are)"),
    "new_repositories": _("New repositories"),
    "comments": _("Comments"),
    "added_to_queue": _("Added to the project's queue"),
    "queued_for_fetching": _("Queued for fetching from the forge"),
}


# The steps a running job names (stored in English, shown in the reader's language).
UPLOAD_STEP_LABELS = {
    "reading": _("reading"),
    "checking": _("checking"),
    "storing": _("storing"),
}


class UploadJob(Job):
    """An uploaded file of issues being checked (a dry run) or imported (`dataset.uploads`);
    its lifecycle and claim are `lib.jobs.Job`'s."""

    JOB_KIND = "upload"
    TASK = UPLOAD_TASK

    class Kind(models.TextChoices):
        CSV = "csv", "CSV"
        JSONL = "jsonl", "JSON Lines"
        URLS = "urls", _("issue URLs")

    class Status(models.TextChoices):
        PENDING = "pending", _("queued")
        RUNNING = "running", _("running")
        DONE = "done", _("done")
        FAILED = "failed", _("nothing imported")

    project = models.ForeignKey(
        "annotator.Project", on_delete=models.CASCADE, related_name="upload_jobs"
    )
    # None only for `manage.py upload_issues` (the operator, every right). A page's job is
    # deleted with its account: it must never run later without the uploader's rights.
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.CASCADE, related_name="+"
    )
    file_name = models.CharField(max_length=200, help_text=_("As uploaded, for messages only."))
    # Relative to settings.UPLOAD_ROOT, made by the server; empty once the task deleted it.
    file_path = models.CharField(max_length=300, blank=True)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    source = models.CharField(
        max_length=200, help_text=_("The repository of issues whose URLs are not of a forge.")
    )
    dry_run = models.BooleanField(default=True)
    add_to_queue = models.BooleanField(default=True)
    fetch = models.BooleanField(default=False, help_text=_("Fetch URL-list issues from the forge."))
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    # The problems in the language the job ran in, and in each language of the site (a reader
    # reads them in theirs: `shown_problems`); a job of before has only the first.
    problems = models.JSONField(default=list, blank=True)
    # db_default: the previous release's code inserts jobs without it (docs/OPERATIONS.md).
    problems_by_language = models.JSONField(
        default=dict, db_default=Value({}, JSONField()), blank=True
    )
    figures = models.JSONField(default=dict, blank=True)
    # Not in its table: its claim is its start (`heartbeat_at`), its problems its error. None
    # leaves an abstract field out (Django); the stubs type the name as the field's value,
    # hence `Any`.
    started_at: Any = None
    error: Any = None

    class Meta:
        verbose_name = _("upload job")
        verbose_name_plural = _("upload jobs")
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"upload {self.pk} of {self.file_name} ({self.status})"

    def task_args(self, language: str | None = None) -> list[Any]:
        """Its id and the language its problems are written in: the uploader's page's when it
        is asked for; none (the site's default) when it is queued again (`annotator.jobsweep`:
        the problems are kept in each language of the site all the same)."""
        return [self.pk, language]

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.PENDING, self.Status.RUNNING)

    @property
    def step_display(self) -> str:
        return str(UPLOAD_STEP_LABELS.get(self.step, self.step))

    @property
    def shown_problems(self) -> list[str]:
        """The problems in the reader's language (as stored when the job has none in it)."""
        return self.problems_by_language.get(translation.get_language() or "", self.problems)

    def labeled_figures(self) -> list[tuple[str, str, object]]:
        """(name, label, value) of the figures to show: the issue count, and those not 0."""
        return [
            (name, str(UPLOAD_FIGURE_LABELS.get(name, name)), value)
            for name, value in self.figures.items()
            if value or name == "issues"
        ]


class FrozenReleaseError(Exception):
    """A change to a release that is done: its files and figures never change."""


class Release(Job):
    """A frozen, versioned copy of a project's final dataset (see `dataset.releases`).

    Once `done`, the row's frozen fields refuse to change and its ZIP is never rewritten; a
    later dataset is a new release with a greater version. Its build's lifecycle and claim are
    `lib.jobs.Job`'s: who asked is `requested_by` (column `created_by_id`), when it was released
    `finished_at` (column `built_at`).
    """

    JOB_KIND = "release"
    TASK = RELEASE_TASK

    class Status(models.TextChoices):
        PENDING = "pending", _("queued")
        RUNNING = "running", _("building")
        DONE = "done", _("released")
        FAILED = "failed", _("failed")

    FROZEN_FIELDS = (
        "project_id",
        "version",
        "note",
        "title",
        "authors",
        "licence",
        "requested_by_id",
        "created_at",
        "taxonomy_version_id",
        "counts",
        "agreement",
        "file_path",
        "size",
        "sha256",
        "manifest",
        "finished_at",
    )

    project = models.ForeignKey(
        "annotator.Project", on_delete=models.PROTECT, related_name="releases"
    )
    # Semantic version X.Y.Z; each release of a project is greater than the one before.
    version = models.CharField(max_length=40)
    note = models.TextField(blank=True)
    # How it is cited (CITATION.cff, croissant.json, datapackage.json): asked when it is made,
    # prefilled from the project (`dataset.releases.citation_defaults`). Authors one per line,
    # "Family, Given[, ORCID]" for a person, "Name[, ORCID]" for an organisation; none leaves
    # the citation incomplete, which the page and CITATION.cff say (`dataset.metadata`).
    title = models.CharField(max_length=300, blank=True)
    authors = models.TextField(blank=True)
    licence = models.CharField(max_length=100, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_column="created_by_id",
    )
    # The taxonomy version its labels are written in (set when it is built).
    taxonomy_version = models.ForeignKey(
        "taxonomy.TaxonomyVersion",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    counts = models.JSONField(default=dict, blank=True)
    # The agreement table (type x level: Fleiss' kappa, Krippendorff's alpha) it was made with.
    agreement = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    # Relative to settings.EXPORT_ROOT; never a user-supplied path.
    file_path = models.CharField(max_length=300, blank=True)
    size = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    # Every file of the ZIP with its SHA-256 and size (as manifest.json inside it).
    manifest = models.JSONField(default=dict, blank=True)
    # When it was released (its manifest's `released_at`); None until then, and when it failed.
    finished_at = models.DateTimeField(null=True, blank=True, db_column="built_at")

    class Meta:
        verbose_name = _("release")
        verbose_name_plural = _("releases")
        ordering = ["-created_at", "-pk"]
        constraints = [
            # A failed build leaves no file: its version may be released again.
            models.UniqueConstraint(
                fields=["project", "version"],
                condition=~models.Q(status="failed"),
                name="unique_release_version",
            )
        ]

    def __str__(self) -> str:
        return f"{self.project} {self.version}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None:
            stored = (
                Release.objects.filter(pk=self.pk, status=Release.Status.DONE)
                .values(*self.FROZEN_FIELDS, "status")
                .first()
            )
            if stored is not None:
                changed = [
                    f for f in (*self.FROZEN_FIELDS, "status") if getattr(self, f) != stored[f]
                ]
                if changed:
                    raise FrozenReleaseError(
                        f"release {self.version} is frozen: {', '.join(changed)} cannot change"
                    )
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        if self.status == Release.Status.DONE:
            raise FrozenReleaseError(f"release {self.version} is frozen: it cannot be deleted")
        return super().delete(*args, **kwargs)

    @property
    def filename(self) -> str:
        return f"release-{self.project_id}-{self.version}.zip"


class RecallProbe(models.Model):
    """An issue the keyword filter dropped, drawn into a project's queue to measure the
    filter's recall (see `dataset.recall`).

    Labeled blind like any issue: nothing an annotator sees tells a probe from another issue.
    Only this row knows; a draw is the set of probes drawn together (numbered per project).
    """

    project = models.ForeignKey(
        "annotator.Project", on_delete=models.CASCADE, related_name="recall_probes"
    )
    project_issue = models.OneToOneField(
        "labeling.ProjectIssue", on_delete=models.CASCADE, related_name="recall_probe"
    )
    issue = models.ForeignKey("ingest.Issue", on_delete=models.CASCADE, related_name="+")
    # 1, 2, … per project: a later draw adds probes from the dropped issues not drawn yet.
    draw = models.PositiveIntegerField()
    seed = models.PositiveIntegerField()
    # The target margin of error the draw's size came from (empty: a size was asked).
    margin = models.FloatField(null=True, blank=True)
    # Dropped issues of the probe's repository (in the project's scope) when it was drawn.
    stratum_size = models.PositiveIntegerField(default=0)
    drawn_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    drawn_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("recall probe")
        verbose_name_plural = _("recall probes")
        ordering = ["project", "draw", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["project", "issue"], name="one_probe_per_issue")
        ]
        indexes = [models.Index(fields=["project", "draw"])]

    def __str__(self) -> str:
        return f"recall probe {self.issue_id} in {self.project} (draw {self.draw})"


class PublishedRepeat(models.Model):
    """A row of an imported label file that repeats an issue URL read before it (in the same
    file or another). The import keeps the first row's labels for the issue; this row keeps the
    repeat's own final label so that Table I can count the published rows, as the paper does
    (`agreement.table_one`, `count="rows"`), and not only the issues.
    """

    project = models.ForeignKey(
        "annotator.Project", on_delete=models.CASCADE, related_name="published_repeats"
    )
    issue = models.ForeignKey(
        "ingest.Issue", on_delete=models.CASCADE, related_name="published_repeats"
    )
    # The label file's name and the row's line in it.
    file_name = models.CharField(max_length=255)
    line = models.PositiveIntegerField()
    # The repeated row's own final label (the import's codes: a theme or a sub-theme).
    issue_type = models.ForeignKey(
        "taxonomy.TaxonomyNode", null=True, on_delete=models.PROTECT, related_name="+"
    )
    theme = models.ForeignKey(
        "taxonomy.TaxonomyNode", null=True, on_delete=models.PROTECT, related_name="+"
    )
    sub_theme = models.ForeignKey(
        "taxonomy.TaxonomyNode", null=True, on_delete=models.PROTECT, related_name="+"
    )
    is_false_positive = models.BooleanField(default=False)

    class Meta:
        verbose_name = _("published repeated row")
        verbose_name_plural = _("published repeated rows")
        ordering = ["project", "file_name", "line"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "file_name", "line"], name="one_repeat_per_published_row"
            )
        ]

    def __str__(self) -> str:
        return f"{self.file_name}, line {self.line}: repeats issue {self.issue_id}"


# The steps a running ranking names (stored in English, shown in the reader's language).
RANKING_STEP_LABELS = {
    "training": _("training the classifier"),
    "scoring": _("scoring the dropped issues"),
    "storing": _("storing the ranking"),
}


class RecallRanking(Job):
    """The classifier's ranking of a project's dropped issues (`dataset.beyond_keywords`),
    computed by a job, never in a request: once per version of the project's classifier rater
    (queued when the rater is trained), or when a lead asks (`rater` empty where the project
    has no trained classifier rater). The recall page reads the latest ready ranking of the
    current (rater, version); a rater trained again gets a new one. Its lifecycle and claim are
    `lib.jobs.Job`'s; a failed ranking is not run again (a new one is asked for)."""

    JOB_KIND = "ranking"
    TASK = RANKING_TASK

    class Status(models.TextChoices):
        PENDING = "pending", _("queued")
        RUNNING = "running", pgettext_lazy("a job's status", "ranking")
        DONE = "done", _("ready")
        FAILED = "failed", _("failed")

    project = models.ForeignKey(
        "annotator.Project", on_delete=models.CASCADE, related_name="recall_rankings"
    )
    rater = models.ForeignKey(
        "labeling.MachineRater", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    rater_version = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    # `error` holds a message stored to be read in each reader's language
    # (`lib.stored_messages`).
    trained_on = models.PositiveIntegerField(default=0, help_text=_("final issues trained on"))
    scored = models.PositiveIntegerField(default=0, help_text=_("dropped issues scored"))

    class Meta:
        verbose_name = _("recall ranking")
        verbose_name_plural = _("recall rankings")
        ordering = ["-created_at", "-pk"]
        indexes = [
            models.Index(fields=["project", "rater", "rater_version"], name="recall_ranking_key")
        ]

    def __str__(self) -> str:
        return f"ranking {self.pk} of {self.project} (v{self.rater_version}, {self.status})"

    @property
    def error_shown(self) -> str:
        """The error in the reader's language (`lib.stored_messages`)."""
        return stored_messages.shown(self.error)

    @property
    def step_shown(self) -> str:
        return str(RANKING_STEP_LABELS.get(self.step, self.step))


class RankedIssue(models.Model):
    """One dropped issue's score in a ranking: the probability that it is not a false positive."""

    ranking = models.ForeignKey(RecallRanking, on_delete=models.CASCADE, related_name="scores")
    issue = models.ForeignKey("ingest.Issue", on_delete=models.CASCADE, related_name="+")
    relevance = models.FloatField()

    class Meta:
        verbose_name = _("ranked dropped issue")
        verbose_name_plural = _("ranked dropped issues")
        constraints = [
            models.UniqueConstraint(fields=["ranking", "issue"], name="one_score_per_ranked_issue")
        ]
        indexes = [
            models.Index(fields=["ranking", "-relevance", "issue"], name="ranked_issue_order")
        ]

    def __str__(self) -> str:
        return f"{self.issue_id}: {self.relevance:.3f}"
