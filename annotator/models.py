"""The core data: projects (studies), their members with roles, and invites.

The labeling workflow's data (issues in a project's queue, annotations, final labels) lives in
`labeling.models`; this app knows nothing of it.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy


class Role(models.TextChoices):
    # The value is stored and exported; the label is what a page shows (templates translate a
    # stored value with `{% translate role context "role" %}`).
    ANNOTATOR = "annotator", pgettext_lazy("role", "annotator")
    LEAD = "lead", pgettext_lazy("role", "lead")
    RESEARCHER = "researcher", pgettext_lazy("role", "researcher")
    ADMIN = "admin", pgettext_lazy("role", "admin")


# Roles allowed to run a study (set it up, resolve, see who labeled what).
LEAD_ROLES = (Role.LEAD, Role.ADMIN)


class Project(models.Model):
    class Policy(models.TextChoices):
        # A false-positive exclusion needs all K votes under either policy (the study's rule).
        LEAD_DECIDES = "lead_decides", _("a lead decides every disagreement")
        MAJORITY = "majority", _("a majority at the threshold share finalizes automatically")

    name = models.CharField(_("name"), max_length=200, unique=True)
    description = models.TextField(_("description"), blank=True)
    taxonomy_version = models.ForeignKey(
        "taxonomy.TaxonomyVersion",
        on_delete=models.PROTECT,
        related_name="projects",
        verbose_name=_("taxonomy version"),
    )
    annotations_per_issue = models.PositiveSmallIntegerField(
        _("annotations per issue"),
        default=settings.DEFAULT_ANNOTATIONS_PER_ISSUE,
        help_text=_("K: independent annotations each issue needs (the study used 7)."),
    )
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        through="Membership",
        related_name="projects",
        verbose_name=_("members"),
    )
    resolution_policy = models.CharField(
        _("resolution policy"), max_length=20, choices=Policy.choices, default=Policy.LEAD_DECIDES
    )
    majority_threshold = models.FloatField(
        _("majority threshold"),
        default=0.6,
        help_text=_("Share of the K votes a label needs under the majority policy."),
    )

    class StoppingRule(models.TextChoices):
        FIXED = "fixed", _("fixed: every issue gets K labels")
        ADAPTIVE = "adaptive", _("adaptive: stop early once the leading choice is far enough ahead")

    # When an issue has enough labels. Under the adaptive rule an issue is decided after at
    # least `min_labels` labels as soon as the leading choice at the deciding level is
    # `lead_margin` votes ahead of the runner-up; at K the usual rules apply.
    stopping_rule = models.CharField(
        _("stopping rule"), max_length=10, choices=StoppingRule.choices, default=StoppingRule.FIXED
    )
    min_labels = models.PositiveSmallIntegerField(
        _("min labels"),
        default=2,
        help_text=_("Adaptive rule: labels every issue gets before it can be decided."),
    )
    # The alternative annotator test's cost-benefit margin (`agreement.alt_test`): how much
    # worse than a volunteer a machine rater may be and still stand in, for its lower cost.
    alt_test_epsilon = models.FloatField(
        _("alt-test margin (ε)"),
        default=0.2,
        db_default=0.2,  # the previous release's code creates projects without it
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text=_(
            "How much worse than a volunteer a machine rater may be and still pass the "
            "alternative annotator test (0.2 is its authors' suggestion)."
        ),
    )
    lead_margin = models.PositiveSmallIntegerField(
        _("lead margin"),
        default=2,
        help_text=_("Adaptive rule: votes the leading choice must be ahead by."),
    )
    needs_more_first = models.BooleanField(
        _("needs more first"),
        default=True,
        help_text=_("Adaptive rule: serve issues that need one more label before fresh ones."),
    )
    # Markdown written by the leads, sanitised when rendered; annotators see it above the task.
    guideline = models.TextField(_("guideline"), blank=True)
    # For CITATION.cff and the datasheet of a release: one author per line ("Family, Given").
    citation_authors = models.TextField(_("citation authors"), blank=True)
    licence = models.CharField(_("licence"), max_length=100, default="CC-BY-4.0")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # Seed of the pilot sample and of the queue shuffle, so the order can be reproduced.
    queue_seed = models.PositiveIntegerField(_("queue seed"), default=0)
    pilot_size = models.PositiveIntegerField(_("pilot size"), default=0)
    # The scope last applied by the setup page (repositories, filter states, date window).
    scope = models.JSONField(_("scope"), default=dict, blank=True)
    # Show taxonomy descriptions in the reader's language where the taxonomy has them (the
    # study's has Chinese ones, `taxonomy.texts`); off: as the project wrote them.
    translated_descriptions = models.BooleanField(_("translated descriptions"), default=False)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("project")
        verbose_name_plural = _("projects")

    def __str__(self) -> str:
        return self.name

    def role_of(self, user: User) -> str | None:
        if not user.is_authenticated:
            return None
        membership = self.memberships.filter(user=user).only("role").first()
        return membership.role if membership else None


class Membership(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(_("role"), max_length=20, choices=Role.choices, default=Role.ANNOTATOR)
    # Stable pseudonym used in exports and imported data (e.g. "rater-3"): every member gets
    # the project's next rater-N when added (see `save`); a lead may change it.
    pseudonym = models.CharField(_("pseudonym"), max_length=50, blank=True)
    joined_at = models.DateTimeField(_("joined at"), auto_now_add=True)

    class Meta:
        ordering = ["project", "user__username"]
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="unique_membership"),
            models.UniqueConstraint(
                fields=["project", "pseudonym"],
                condition=~models.Q(pseudonym=""),
                name="unique_pseudonym_in_project",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.role}) in {self.project}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self._state.adding and not self.pseudonym:
            self.pseudonym = next_pseudonym(self.project_id)
        super().save(*args, **kwargs)


PSEUDONYM_PATTERN = re.compile(r"rater-(\d+)")


def next_pseudonym(project_id: int) -> str:
    """The project's next free rater-N (one more than the highest N in use)."""
    taken = Membership.objects.filter(project_id=project_id, pseudonym__startswith="rater-")
    numbers = [
        int(m.group(1))
        for name in taken.values_list("pseudonym", flat=True)
        if (m := PSEUDONYM_PATTERN.fullmatch(name))
    ]
    return f"rater-{max(numbers, default=0) + 1}"


def _hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Invite(models.Model):
    """A one-time link that lets a volunteer set a password and join a project with a role."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="invites")
    role = models.CharField(_("role"), max_length=20, choices=Role.choices, default=Role.ANNOTATOR)
    email = models.EmailField(_("email"), blank=True)
    # Only a hash is stored: the link itself is shown once, to the person who made it.
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    expires_at = models.DateTimeField(_("expires at"))
    used_at = models.DateTimeField(_("used at"), null=True, blank=True)
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("invite")
        verbose_name_plural = _("invites")

    def __str__(self) -> str:
        return f"invite to {self.project} as {self.role}"

    @classmethod
    def issue_for(
        cls, project: Project, role: str, created_by: User, email: str = "", days: int = 7
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


class Preference(models.Model):
    """A person's own settings for the interface: one row per account, made on first save.

    `language` is a code of `settings.LANGUAGES`, or empty for "the browser decides"
    (`annotator.language`: the saved choice wins over the cookie and Accept-Language).
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="preference",
    )
    language = models.CharField(
        _("language"), max_length=16, blank=True, choices=settings.LANGUAGES
    )

    class Meta:
        verbose_name = _("preference")
        verbose_name_plural = _("preferences")

    def __str__(self) -> str:
        return f"preferences of {self.user}"


class QueuedTask(models.Model):
    """A Celery task asked for but not yet started by a worker: the outbox (annotator.outbox).

    Written in the transaction that records its job, so a job and its task are both stored or
    neither; handed to the broker after the commit, and deleted by the worker that starts it.
    While Redis is away the row waits (the job "waiting for a worker"), and the sweep hands it
    over once the broker is back; a task handed over but lost with a Redis that restarted
    empty is handed over again after OUTBOX_REPUBLISH_SECONDS (tasks are safe to run twice).
    """

    task = models.CharField(max_length=200)
    args = models.JSONField(default=list)
    kwargs = models.JSONField(default=dict)
    queue = models.CharField(max_length=100, blank=True)
    eta = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # When the broker last took it (null: never yet).
    published_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)

    class Meta:
        indexes = [models.Index(fields=["published_at", "created_at"])]
        verbose_name = _("queued task")
        verbose_name_plural = _("queued tasks")

    def __str__(self) -> str:
        return f"{self.task}{tuple(self.args)}"
