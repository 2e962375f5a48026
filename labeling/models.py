"""The labeling workflow's data: issues in a project's queue, annotations, final labels.

An annotation is never overwritten: changing one's label writes a new revision and marks the
older one as no longer current. A `Resolution` is an issue's final label in a project; a lead
can reopen it, which keeps the old one as history. Proposals of new categories and the lead's
review of annotators' summaries (`DetailEntry`) are labeling work too. The machine raters'
labels (`MachineRater`, `MachineLabel`) sit beside the human ones: `raters` makes them, and
which of them vote under the adaptive stopping rule is stated here once
(`MachineLabelQuerySet`).

The tables keep the names they had when these models lived in `annotator`, `taxonomy` and
`raters`.
"""

from __future__ import annotations

import secrets
from typing import Self

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from annotator.models import Project
from taxonomy.codes import label_code
from taxonomy.models import TaxonomyNode

# The first level at which an issue's labels differ, in the words the lead's pages use.
DISAGREEMENT_LEVEL_NAMES = {
    "false_positive": _("not LLM-related"),
    "type": _("type"),
    "theme": _("theme"),
    "sub_theme": _("sub-theme"),
}


# Public ids of queue items: random in [2**32, 2**53), so no id reveals when its item joined
# the queue (a recall probe drawn late would otherwise show a higher id), none equals a row id
# (an old URL is a 404, not another issue), and each stays exact as a JavaScript number.
PUBLIC_ID_LOW = 2**32
PUBLIC_ID_HIGH = 2**53


def new_public_id() -> int:
    """A fresh random public id for a `ProjectIssue` (see `PUBLIC_ID_LOW`)."""
    return PUBLIC_ID_LOW + secrets.randbelow(PUBLIC_ID_HIGH - PUBLIC_ID_LOW)


def list_status_rank() -> models.Case:
    """Where a queue row's status comes in the issue list's order of statuses
    (`labeling.issue_list.STATUS_NAMES`): open (no label) 0, in progress (some labels) 1,
    disagreement 2, final 3. The list sorts by this expression and two indexes of
    `ProjectIssue` hold it, the same expression, so that the planner reads a page from them.
    (The values of `ProjectIssue.Status`, spelled out: the class does not exist yet when its
    `Meta` calls this.)"""
    return models.Case(
        models.When(status="final", then=models.Value(3)),
        models.When(status="disagreement", then=models.Value(2)),
        models.When(annotation_count__gt=0, then=models.Value(1)),
        default=models.Value(0),
        output_field=models.IntegerField(),
    )


class ProjectIssue(models.Model):
    """An issue in a project's scope, with its place in the labeling queue.

    `public_id` names it in every annotator-facing URL: random, so ordinary issues and recall
    probes (`dataset.recall`) draw their ids from one distribution whenever they joined.
    """

    class Status(models.TextChoices):
        OPEN = "open", _("needs annotations")
        DISAGREEMENT = "disagreement", _("in the disagreement queue")
        FINAL = "final", pgettext_lazy("issue status", "final")

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="project_issues")
    issue = models.ForeignKey(
        "ingest.Issue", on_delete=models.CASCADE, related_name="project_issues"
    )
    # Unique per project (the URLs carry the project too); about 2e-7 chance of a clash among
    # 60,000 items, which the constraint turns into an error rather than a shared id.
    public_id = models.PositiveBigIntegerField(default=new_public_id, editable=False)
    is_pilot = models.BooleanField(default=False)
    # Queue order: pilot first, then a seeded shuffle so repositories interleave.
    position = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN)
    # Distinct annotators with a current annotation; kept under the row lock so the queue
    # can skip full issues without counting annotations.
    annotation_count = models.PositiveSmallIntegerField(default=0)
    # When the newest current label came (None before the first): the issue list shows it and
    # sorts by it. Written with annotation_count by every path that stores a label
    # (`labeling.submission`, its PL/pgSQL function, `dataset.importer`, the demo's dates).
    last_label_at = models.DateTimeField(null=True, blank=True)
    # First level where the K annotations differ ("" when they agree) and how split the votes
    # are (1 - share of the most common label): the lead queue filters and sorts on them.
    disagreement_level = models.CharField(max_length=20, blank=True)
    split = models.FloatField(default=0)
    added_at = models.DateTimeField(auto_now_add=True)
    # The issue's repository, a copy the database keeps (triggers of migration 0009, on
    # PostgreSQL; NULL elsewhere): the issue list by number counts a project's rows per
    # repository from this table alone (`labeling.issue_list.ByRepository`), not by joining
    # every issue. Never written by the code: an issue's repository is read from the issue.
    repository = models.ForeignKey(
        "ingest.Repository",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        editable=False,
        db_index=False,  # (the index below leads with the project)
        # (Its issue's key holds: no check per row written, e.g. 387,420 when filled.)
        db_constraint=False,
        related_name="+",
        verbose_name=_("repository"),
    )

    class Meta:
        verbose_name = _("issue in a project")
        verbose_name_plural = _("issues in projects")
        db_table = "annotator_projectissue"
        ordering = ["project", "position"]
        constraints = [
            models.UniqueConstraint(fields=["project", "issue"], name="unique_issue_in_project"),
            models.UniqueConstraint(
                fields=["project", "public_id"], name="unique_public_id_in_project"
            ),
        ]
        indexes = [
            models.Index(fields=["project", "status", "position"]),
            # The open issues that already have labels, in queue order: what the queue looks
            # at first under the adaptive rule's `needs_more_first` (few rows at any time).
            models.Index(
                fields=["project", "position"],
                name="projectissue_needs_more",
                condition=models.Q(status="open", annotation_count__gt=0),
            ),
            # The issue list sorted by status (`list_status_rank`), then queue order, then row
            # id, each way: a page is read from here, not sorted from the whole project. (By
            # last label has its indexes in migration 0007: PostgreSQL only.)
            models.Index(
                F("project"),
                list_status_rank().desc(),
                F("position"),
                F("id").desc(),
                name="projectissue_list_status_desc",
            ),
            models.Index(
                F("project"),
                list_status_rank(),
                F("position"),
                F("id"),
                name="projectissue_list_status_asc",
            ),
            # The project's rows per repository (the issue list by number's counts).
            models.Index(fields=["project", "repository"], name="projectissue_repository"),
        ]

    def __str__(self) -> str:
        return f"{self.issue} in {self.project}"

    @property
    def level_name(self) -> str:
        """Where the labels first differ, in words (`name_of_level`)."""
        return self.name_of_level(self.disagreement_level, self.status)

    @classmethod
    def name_of_level(cls, level: str, status: str) -> str:
        """The one "reopened" rule: where an issue's labels first differ, in words; a disputed
        issue whose labels agree was reopened by a lead; "" where they agreed or are not all in.
        A classmethod too, for counts grouped by level and status (the lead's dashboard)."""
        if level:
            return str(DISAGREEMENT_LEVEL_NAMES.get(level, level))
        return gettext("reopened") if status == cls.Status.DISAGREEMENT else ""


class FalsePositiveReason(models.TextChoices):
    # The study's three reasons for excluding a report as not LLM-related (section III.A).
    LIGHTWEIGHT_MODEL = (
        "lightweight_model",
        _("lightweight model only, no LLM-specific challenge"),
    )
    KEYWORD_IN_NAMES = "keyword_in_names", _("keyword only in user names, file paths or commits")
    LLM_NAMED_COMPONENT = (
        "llm_named_component",
        _("LLM-sounding component without LLM behaviour"),
    )


class LabelFields(models.Model):
    """The label itself, shared by an annotation and a final resolution."""

    is_false_positive = models.BooleanField(default=False)
    false_positive_reason = models.CharField(
        max_length=30, choices=FalsePositiveReason.choices, blank=True
    )
    issue_type = models.ForeignKey(
        "taxonomy.TaxonomyNode", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    theme = models.ForeignKey(
        "taxonomy.TaxonomyNode", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    sub_theme = models.ForeignKey(
        "taxonomy.TaxonomyNode", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        abstract = True

    @property
    def label_code(self) -> str:
        """The most specific code of the label, or "FP" for a false positive."""
        return label_code(self.is_false_positive, self.issue_type, self.theme, self.sub_theme)


class Annotation(LabelFields):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="annotations")
    issue = models.ForeignKey("ingest.Issue", on_delete=models.CASCADE, related_name="annotations")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="annotations"
    )
    revision = models.PositiveIntegerField(default=1)
    # Only the newest revision of an annotator's label on an issue is current.
    is_current = models.BooleanField(default=True)
    is_pilot = models.BooleanField(default=False)
    summary = models.TextField(blank=True, help_text=_("The symptom, intent or expectation."))
    note = models.TextField(blank=True)
    proposed_category = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = _("annotation")
        verbose_name_plural = _("annotations")
        db_table = "annotator_annotation"
        ordering = ["project", "issue", "annotator", "revision"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "issue", "annotator", "revision"],
                name="unique_annotation_revision",
            ),
            models.UniqueConstraint(
                fields=["project", "issue", "annotator"],
                condition=Q(is_current=True),
                name="one_current_annotation",
            ),
        ]
        indexes = [
            models.Index(fields=["project", "issue", "is_current"]),
            # "What has this annotator labeled here": the queue asks it on every next issue.
            models.Index(fields=["project", "annotator", "is_current"]),
        ]

    def __str__(self) -> str:
        return f"{self.annotator} on {self.issue} r{self.revision}: {self.label_code}"


class Resolution(LabelFields):
    class Method(models.TextChoices):
        UNANIMOUS = "unanimous", pgettext_lazy("resolution method", "unanimous")
        MAJORITY = "majority", _("majority vote")
        CONSENSUS = "consensus", _("consensus after discussion")
        LEAD_DECISION = "lead_decision", _("lead decision")
        IMPORTED = "imported", _("imported from a published dataset")

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="resolutions")
    issue = models.ForeignKey("ingest.Issue", on_delete=models.CASCADE, related_name="resolutions")
    method = models.CharField(max_length=20, choices=Method.choices)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(default=timezone.now)
    note = models.TextField(blank=True)
    # A reopened resolution stays as history with is_current False.
    is_current = models.BooleanField(default=True)
    reopened_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reopened_at = models.DateTimeField(null=True, blank=True)
    # The annotations (ids of the exact revisions) the final label was decided on: labels lock
    # when the K-th arrives, so these are the issue's current annotations at that moment.
    based_on = models.JSONField(default=list, blank=True)

    class Meta:
        verbose_name = _("resolution")
        verbose_name_plural = _("resolutions")
        db_table = "annotator_resolution"
        ordering = ["project", "issue", "-decided_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "issue"],
                condition=Q(is_current=True),
                name="one_current_resolution",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.issue} in {self.project}: {self.label_code} ({self.method})"


# What each method says happened: shown on the resolve page beside the lead's choices, in a
# release's DATASHEET.md, and in docs/DATASET.md ("How a final label was decided").
RESOLUTION_METHOD_MEANINGS = {
    Resolution.Method.UNANIMOUS: _("every label of the issue was the same; no lead decided it"),
    Resolution.Method.MAJORITY: _(
        "the annotators' votes decided it under the project's majority policy or the adaptive"
        " stopping rule; no lead decided it"
    ),
    Resolution.Method.CONSENSUS: _(
        "a lead recorded the label a discussion in the tool agreed on; the issue has messages in"
        " its discussion"
    ),
    Resolution.Method.LEAD_DECISION: _(
        "a lead chose the label, one annotator's or a new one, on their own judgement; it claims"
        " no discussion"
    ),
    Resolution.Method.IMPORTED: _("the final label of a published dataset, imported as it was"),
}


class QueueFrontier(models.Model):
    """How far an annotator has certainly come through a project's queue.

    Every open issue before `position` is one they labeled or handed back, so the queue starts
    looking for their next issue there. Without it, a volunteer far ahead of the others (in
    the study all seven labeled every issue) stepped past every issue they had labeled and the
    others had not, on every request. Positions change only when the queue is ordered again,
    which deletes the project's frontiers.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    position = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = _("queue frontier")
        verbose_name_plural = _("queue frontiers")
        db_table = "annotator_queuefrontier"
        constraints = [
            models.UniqueConstraint(
                fields=["project", "annotator"], name="one_frontier_per_annotator"
            )
        ]

    def __str__(self) -> str:
        return f"{self.annotator} in {self.project}: from position {self.position}"


class Reservation(models.Model):
    """An issue handed to an annotator; it holds one of the issue's K slots until it expires.

    A skipped reservation holds no slot but keeps the issue behind the others for that annotator.
    """

    project_issue = models.ForeignKey(
        ProjectIssue, on_delete=models.CASCADE, related_name="reservations"
    )
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reservations"
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    skipped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("reservation")
        verbose_name_plural = _("reservations")
        db_table = "annotator_reservation"
        constraints = [
            models.UniqueConstraint(
                fields=["project_issue", "annotator"], name="one_reservation_per_annotator"
            )
        ]
        indexes = [models.Index(fields=["annotator", "expires_at"])]

    def __str__(self) -> str:
        return f"{self.project_issue} reserved by {self.annotator} until {self.expires_at}"


class DiscussionMessage(models.Model):
    """A note in an issue's discussion: a lead's, or an annotator's request to change a label.

    An annotator's label locks when the issue has its K labels; what they would change goes
    here as a change request, for the lead. Annotators see only their own messages.
    """

    project_issue = models.ForeignKey(
        ProjectIssue, on_delete=models.CASCADE, related_name="discussion"
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    body = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)
    is_change_request = models.BooleanField(default=False)

    class Meta:
        verbose_name = _("discussion message")
        verbose_name_plural = _("discussion messages")
        db_table = "annotator_discussionmessage"
        ordering = ["project_issue", "created_at", "id"]

    def __str__(self) -> str:
        return f"message by {self.author} on {self.project_issue}"


class Proposal(models.Model):
    """A volunteer's proposal of a new theme or sub-theme, decided by unanimous approval."""

    class Status(models.TextChoices):
        PENDING = "pending", _("open for votes")
        ACCEPTED = "accepted", pgettext_lazy("proposal status", "accepted")
        REJECTED = "rejected", pgettext_lazy("proposal status", "rejected")

    project = models.ForeignKey(
        "annotator.Project", on_delete=models.CASCADE, related_name="taxonomy_proposals"
    )
    name = models.CharField(max_length=300)
    description = models.TextField(blank=True)
    # The parent as it was when proposed; mapped forward through lineage when accepted.
    parent = models.ForeignKey(TaxonomyNode, on_delete=models.PROTECT, related_name="+")
    issues = models.ManyToManyField("ingest.Issue", blank=True, related_name="+")
    proposed_by = models.ForeignKey(
        "auth.User", on_delete=models.PROTECT, related_name="taxonomy_proposals"
    )
    source_annotation = models.OneToOneField(
        Annotation,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="taxonomy_proposal",
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    decided_by = models.ForeignKey(
        "auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    rejection_reason = models.TextField(blank=True)
    created_node = models.ForeignKey(
        TaxonomyNode, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("taxonomy proposal")
        verbose_name_plural = _("taxonomy proposals")
        db_table = "taxonomy_proposal"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} under {self.parent.code} ({self.status})"

    @property
    def level_label(self) -> str:
        if self.parent.level == TaxonomyNode.Level.TYPE:
            return gettext("theme")
        return gettext("sub-theme")


class ProposalVote(models.Model):
    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="votes")
    voter = models.ForeignKey("auth.User", on_delete=models.CASCADE, related_name="+")
    approve = models.BooleanField()
    comment = models.TextField(blank=True)
    voted_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("proposal vote")
        verbose_name_plural = _("proposal votes")
        db_table = "taxonomy_proposalvote"
        constraints = [
            models.UniqueConstraint(fields=["proposal", "voter"], name="one_vote_per_voter")
        ]

    def __str__(self) -> str:
        return f"{self.voter} {'approves' if self.approve else 'dissents'} {self.proposal_id}"


class DetailEntry(models.Model):
    """An annotator's summary (symptom, intent, expectation) as reviewed under a sub-theme.

    The annotation row is never edited: the lead's review (moving, merging duplicates) lives here.
    """

    project = models.ForeignKey(
        "annotator.Project", on_delete=models.CASCADE, related_name="detail_entries"
    )
    annotation = models.OneToOneField(
        Annotation,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="detail_entry",
    )
    text = models.TextField()
    # The most specific node the summary sits under, in whatever version it was set.
    node = models.ForeignKey(TaxonomyNode, on_delete=models.PROTECT, related_name="+")
    merged_into = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="duplicates"
    )
    reviewed_by = models.ForeignKey(
        "auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("detail entry")
        verbose_name_plural = _("detail entries")
        db_table = "taxonomy_detailentry"
        ordering = ["project", "pk"]

    def __str__(self) -> str:
        return f"{self.node.code}: {self.text[:40]}"


# --- Machine raters and their labels ---------------------------------------------------------
# Beside the human labels (as Label Studio keeps `Prediction` beside `Annotation`): labeling
# reads an enlisted rater's vote (`MachineLabelQuerySet.enlisted_votes`, the one statement of
# the rule) and the app that makes the labels, `raters`, sits above it. The tables keep the
# names they had in `raters`.


class MachineRater(models.Model):
    """One configured machine rater of a project: a classifier trained in the project, an LLM
    behind an OpenAI-compatible endpoint (the backends live in `raters.backends`), or labels
    imported from a file.

    A lead may enlist a rater (`enlisted`, off by default): under the adaptive stopping rule
    its label counts as one vote when its confidence reaches `confidence_threshold` (no
    threshold: it never votes), beside at least one human label (`labeling.stopping`; the
    votes are `MachineLabel.objects.enlisted_votes`)."""

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
        db_table = "raters_machinerater"
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="unique_rater_name")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind}) in {self.project}"

    def current_version_labels(self) -> MachineLabelQuerySet:
        """The current labels its current version gave: a classifier's labels name the
        training they came from (`model_version` "v<version>", `raters.classifier`), so a
        classifier trained again counts none of its older labels; an external rater's labels
        are all of its latest file; an llm rater has one version (its settings never change).
        What validation for enlisting and the alternative annotator test read."""
        labels = MachineLabel.objects.filter(rater=self, is_current=True)
        if self.kind == MachineRater.Kind.CLASSIFIER:
            labels = labels.filter(model_version=f"v{self.version}")
        return labels


class MachineLabelQuerySet(models.QuerySet["MachineLabel"]):
    """Machine labels, and the one statement of which of them vote."""

    def counting(self, threshold: float | None = None) -> Self:
        """The labels that count as a vote: current, valid, and at or above the confidence
        threshold, `threshold` if given (the policy simulator tries others), else each label's
        rater's own (a rater without one never votes: NULL compares false).
        `labeling.submission._ENLISTED_MACHINE_SQL` states the same in SQL for the PL/pgSQL
        path (`tests/labeling/test_paths_equal.py` holds them equal)."""
        reached = F("rater__confidence_threshold") if threshold is None else threshold
        return self.filter(is_current=True, valid=True, confidence__gte=reached)

    def enlisted_votes(self, project_id: int) -> Self:
        """The votes of the project's enlisted raters under the adaptive stopping rule
        (`labeling.stopping`; read by `labeling.resolution.enlisted_machine_vote`)."""
        return self.filter(rater__project_id=project_id, rater__enlisted=True).counting()


class MachineLabel(LabelFields):
    """One machine rater's label on one issue (the label fields as a human's), with what is
    needed to reproduce and judge it: model and version, the hash of its prompt (for the
    classifier: of its feature configuration and training set), parameters, confidence, time,
    and the raw output with a `valid` flag (an invalid output is kept and counted, never
    dropped). Labels are never overwritten: a new run writes new rows and marks the older ones
    not current.

    Blind: no annotator page reads this table; a label never counts toward K and never changes
    what an annotator is served (an enlisted rater's vote only decides an issue early, beside a
    human label)."""

    rater = models.ForeignKey(MachineRater, on_delete=models.CASCADE, related_name="labels")
    issue = models.ForeignKey(
        "ingest.Issue", on_delete=models.CASCADE, related_name="machine_labels"
    )
    # The run that made it (`raters.models.RaterRun`, named by its label: labeling imports
    # nothing of raters).
    run = models.ForeignKey(
        "raters.RaterRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="labels"
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

    objects = MachineLabelQuerySet.as_manager()

    class Meta:
        verbose_name = _("machine label")
        verbose_name_plural = _("machine labels")
        db_table = "raters_machinelabel"
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


class DashboardSnapshot(models.Model):
    """The lead's dashboard's project-wide figures, computed at `computed_at` (one scan of the
    annotations and the finals: `labeling.dashboard.compute_figures`), so that a page that
    polls every 30 s does not scan them again each time.

    `figures` holds numbers, ids and ISO dates only (no names, no words of a language), read
    back by `labeling.dashboard.Figures.from_json`. `refresh_requested_at` is set by the one
    reader that claimed the refresh of a stale snapshot (a conditional UPDATE) and cleared by
    the refresh that stores new figures: while it is recent, other readers show the snapshot
    and ask for nothing.
    """

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, primary_key=True, related_name="dashboard_snapshot"
    )
    computed_at = models.DateTimeField()
    figures = models.JSONField(default=dict)
    refresh_requested_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("dashboard snapshot")
        verbose_name_plural = _("dashboard snapshots")

    def __str__(self) -> str:
        return f"{self.project}: dashboard figures as of {self.computed_at}"
