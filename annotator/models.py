"""The labeling domain: projects (studies), their members, annotations and final labels.

An annotation is never overwritten: changing one's label writes a new revision and marks the
older one as no longer current. A `Resolution` is an issue's final label in a project; a lead
can reopen it, which keeps the old one as history.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class Role(models.TextChoices):
    ANNOTATOR = "annotator", "annotator"
    LEAD = "lead", "lead"
    RESEARCHER = "researcher", "researcher"
    ADMIN = "admin", "admin"


# Roles allowed to run a study (set it up, resolve, see who labeled what).
LEAD_ROLES = (Role.LEAD, Role.ADMIN)


class Project(models.Model):
    class Policy(models.TextChoices):
        # A false-positive exclusion needs all K votes under either policy (the study's rule).
        LEAD_DECIDES = "lead_decides", "a lead decides every disagreement"
        MAJORITY = "majority", "a majority at the threshold share finalizes automatically"

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    taxonomy_version = models.ForeignKey(
        "taxonomy.TaxonomyVersion", on_delete=models.PROTECT, related_name="projects"
    )
    annotations_per_issue = models.PositiveSmallIntegerField(
        default=settings.DEFAULT_ANNOTATIONS_PER_ISSUE,
        help_text="K: independent annotations each issue needs (the study used 7).",
    )
    issues = models.ManyToManyField("ingest.Issue", through="ProjectIssue", related_name="projects")
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="projects"
    )
    resolution_policy = models.CharField(
        max_length=20, choices=Policy.choices, default=Policy.LEAD_DECIDES
    )
    majority_threshold = models.FloatField(
        default=0.6, help_text="Share of the K votes a label needs under the majority policy."
    )
    # Seed of the pilot sample and of the queue shuffle, so the order can be reproduced.
    queue_seed = models.PositiveIntegerField(default=0)
    pilot_size = models.PositiveIntegerField(default=0)
    # The scope last applied by the setup page (repositories, filter states, date window).
    scope = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def role_of(self, user) -> str | None:
        if not user.is_authenticated:
            return None
        membership = self.memberships.filter(user=user).only("role").first()
        return membership.role if membership else None


class Membership(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.ANNOTATOR)
    # Stable pseudonym used in exports and imported data (e.g. "rater-3").
    pseudonym = models.CharField(max_length=50, blank=True)
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="unique_membership")
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.role}) in {self.project}"


class ProjectIssue(models.Model):
    """An issue in a project's scope, with its place in the labeling queue."""

    class Status(models.TextChoices):
        OPEN = "open", "needs annotations"
        DISAGREEMENT = "disagreement", "in the disagreement queue"
        FINAL = "final", "final"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="project_issues")
    issue = models.ForeignKey(
        "ingest.Issue", on_delete=models.CASCADE, related_name="project_issues"
    )
    is_pilot = models.BooleanField(default=False)
    # Queue order: pilot first, then a seeded shuffle so repositories interleave.
    position = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN)
    # Distinct annotators with a current annotation; kept under the row lock so the queue
    # can skip full issues without counting annotations.
    annotation_count = models.PositiveSmallIntegerField(default=0)
    # First level where the K annotations differ ("" when they agree) and how split the votes
    # are (1 - share of the most common label): the lead queue filters and sorts on them.
    disagreement_level = models.CharField(max_length=20, blank=True)
    split = models.FloatField(default=0)
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "position"]
        constraints = [
            models.UniqueConstraint(fields=["project", "issue"], name="unique_issue_in_project")
        ]
        indexes = [models.Index(fields=["project", "status", "position"])]

    def __str__(self) -> str:
        return f"{self.issue} in {self.project}"


class FalsePositiveReason(models.TextChoices):
    # The study's three reasons for excluding a report as not LLM-related (section III.A).
    LIGHTWEIGHT_MODEL = "lightweight_model", "lightweight model only, no LLM-specific challenge"
    KEYWORD_IN_NAMES = "keyword_in_names", "keyword only in user names, file paths or commits"
    LLM_NAMED_COMPONENT = "llm_named_component", "LLM-sounding component without LLM behaviour"


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
        if self.is_false_positive:
            return "FP"
        node = self.sub_theme or self.theme or self.issue_type
        return node.code if node else ""


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
    summary = models.TextField(blank=True, help_text="The symptom, intent or expectation.")
    note = models.TextField(blank=True)
    proposed_category = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
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
        UNANIMOUS = "unanimous", "unanimous"
        MAJORITY = "majority", "majority vote"
        CONSENSUS = "consensus", "consensus after discussion"
        LEAD_DECISION = "lead_decision", "lead decision"
        IMPORTED = "imported", "imported from a published dataset"

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
        ordering = ["project_issue", "created_at", "id"]

    def __str__(self) -> str:
        return f"message by {self.author} on {self.project_issue}"


def _hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Invite(models.Model):
    """A one-time link that lets a volunteer set a password and join a project with a role."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="invites")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.ANNOTATOR)
    email = models.EmailField(blank=True)
    # Only a hash is stored: the link itself is shown once, to the person who made it.
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"invite to {self.project} as {self.role}"

    @classmethod
    def issue_for(
        cls, project: Project, role: str, created_by, email: str = "", days: int = 7
    ) -> tuple[Invite, str]:
        """Create an invite; return it with the secret token (never stored in clear)."""
        token = secrets.token_urlsafe(32)
        invite = cls.objects.create(
            project=project,
            role=role,
            email=email,
            token_hash=_hash_token(token),
            created_by=created_by,
            expires_at=timezone.now() + timedelta(days=days),
        )
        return invite, token

    @classmethod
    def lookup(cls, token: str) -> Invite | None:
        return cls.objects.filter(token_hash=_hash_token(token)).first()
