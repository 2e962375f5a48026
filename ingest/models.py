"""Forge data: repositories and their issues with discussions, as collected from the forges.

Also the collection machinery's state: keyword sets (data, editable in the admin), sync runs
with their figures, the parts of a run (each a chain of page tasks with its own cursor), and the
ETags of pages already stored.
"""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Length
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _


class KeywordSet(models.Model):
    """A keyword filter for framework repositories (the study's lists ship as defaults)."""

    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    keywords = models.JSONField(default=list, help_text=_("A list of keywords or phrases."))
    default_for_group = models.CharField(
        max_length=100,
        blank=True,
        help_text=_("Used by framework repositories of this study group that name no set."),
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("keyword set")
        verbose_name_plural = _("keyword sets")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Repository(models.Model):
    class Forge(models.TextChoices):
        GITHUB = "github", "GitHub"
        GITEE = "gitee", "Gitee"
        GITLAB = "gitlab", "GitLab"
        # Issues uploaded from a file whose URLs are not of a forge (a mailing-list archive,
        # another tracker): never synced or fetched (`ingest.uploads`).
        UPLOAD = "upload", _("uploaded file")

    DEFAULT_API_URLS: dict[str, str] = {
        Forge.GITHUB: "https://api.github.com",
        Forge.GITEE: "https://gitee.com/api/v5",
        Forge.GITLAB: "https://gitlab.com/api/v4",
    }
    WEB_HOSTS: dict[str, str] = {
        Forge.GITHUB: "github.com",
        Forge.GITEE: "gitee.com",
        Forge.GITLAB: "gitlab.com",
    }

    forge = models.CharField(max_length=10, choices=Forge.choices)
    # Per repository, so GitHub Enterprise, a self-hosted GitLab or the test fake can be used.
    api_url = models.URLField(max_length=300)
    owner = models.CharField(max_length=200, help_text=_("owner, or the GitLab group path"))
    name = models.CharField(max_length=200)
    group = models.CharField(
        max_length=100,
        blank=True,
        help_text=_('The study group it belongs to, e.g. framework "PyTorch" or toolkit "vLLM".'),
    )
    is_framework = models.BooleanField(
        default=False,
        help_text=_("Framework repositories are keyword-filtered; toolkits keep all."),
    )
    include_pull_requests = models.BooleanField(default=False)
    keyword_set = models.ForeignKey(
        KeywordSet,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="repositories",
        help_text=_("Empty: the default set of the repository's group, if any."),
    )
    # Incremental sync: the newest forge update time stored so far (forge clock, UTC).
    synced_until = models.DateTimeField(null=True, blank=True)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    sync_interval_hours = models.PositiveIntegerField(
        default=0, help_text=_("Periodic re-sync through celery beat; 0 = never.")
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("repository")
        verbose_name_plural = _("repositories")
        ordering = ["group", "owner", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["forge", "api_url", "owner", "name"], name="unique_repository_per_forge"
            )
        ]

    def __str__(self) -> str:
        return f"{self.forge}:{self.full_name}"

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def is_uploaded(self) -> bool:
        """Issues that came from an uploaded file, not from a forge (nothing to sync)."""
        return self.forge == self.Forge.UPLOAD

    @property
    def web_url(self) -> str:
        if self.is_uploaded:
            return ""
        return f"https://{self.WEB_HOSTS[self.forge]}/{self.full_name}"


# The states forges give an issue (GitHub and Gitee "open"/"closed", GitLab "opened"/"closed",
# Gitee also "progressing"/"rejected"), shown in the reader's language; another stays as stored.
FORGE_STATES = {
    "open": pgettext_lazy("forge issue state", "open"),
    "opened": pgettext_lazy("forge issue state", "open"),
    "closed": pgettext_lazy("forge issue state", "closed"),
    "progressing": pgettext_lazy("forge issue state", "in progress"),
    "rejected": pgettext_lazy("forge issue state", "rejected"),
}


class Issue(models.Model):
    class FilterStatus(models.TextChoices):
        NOT_FILTERED = "not_filtered", _("not filtered (toolkit: every issue kept)")
        KEPT = "kept", _("kept by the keyword filter")
        FILTERED_OUT = "filtered_out", _("filtered out by the keyword filter")

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="issues")
    # Text, since Gitee numbers look like IBD6YU (and are case-sensitive).
    number = models.CharField(max_length=32)
    # Unique within its repository, not across them: a project's uploaded issue may carry the
    # URL of another project's (docs/SECURITY.md, #28 L2), never its text or its labels.
    url = models.URLField(max_length=500, db_index=True)
    title = models.TextField(blank=True)
    body = models.TextField(blank=True)
    author = models.CharField(max_length=200, blank=True)
    state = models.CharField(max_length=20, blank=True)
    labels = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    comments_count = models.PositiveIntegerField(default=0)
    is_pull_request = models.BooleanField(default=False)
    raw = models.JSONField(default=dict, blank=True)
    # Keyword filtering; filtered-out issues are kept so false negatives can be estimated.
    filter_status = models.CharField(
        max_length=20, choices=FilterStatus.choices, default=FilterStatus.NOT_FILTERED
    )
    matched_keywords = models.JSONField(default=list, blank=True)
    # When the forge data was last fetched; null for an issue known only by its URL so far.
    fetched_at = models.DateTimeField(null=True, blank=True)
    # The year of the study's URL list it came from (`<repo>_<year>.txt`): Table I counts an
    # issue by this year until the forge's creation date is fetched.
    study_year = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text=_(
            "Year of the URL list it came from; Table I uses it until created_at is known."
        ),
    )

    class Meta:
        verbose_name = _("issue")
        verbose_name_plural = _("issues")
        ordering = ["repository", "created_at"]
        constraints = [
            models.UniqueConstraint(fields=["repository", "number"], name="unique_issue_number"),
            models.UniqueConstraint(fields=["repository", "url"], name="unique_issue_url"),
        ]
        indexes = [
            models.Index(fields=["repository", "updated_at"]),
            models.Index(fields=["repository", "filter_status"]),
            # A repository's issues by number, shorter first (the issue list's order "by
            # number" within a repository, `labeling.issue_list._number_order`), each way.
            models.Index(
                models.F("repository"),
                Length("number"),
                models.F("number"),
                models.F("id"),
                name="ingest_issue_number_order",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.repository.full_name}#{self.number}"

    @property
    def state_shown(self) -> str:
        """The forge's state in the reader's language (a state no forge documents: as stored)."""
        return str(FORGE_STATES.get(self.state.lower(), self.state))


class Comment(models.Model):
    issue = models.ForeignKey(Issue, on_delete=models.CASCADE, related_name="comments")
    forge_id = models.CharField(max_length=64)
    author = models.CharField(max_length=200, blank=True)
    body = models.TextField(blank=True)
    created_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    raw = models.JSONField(default=dict, blank=True)

    class Meta:
        verbose_name = _("comment")
        verbose_name_plural = _("comments")
        ordering = ["issue", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["issue", "forge_id"], name="unique_comment_per_issue")
        ]

    def __str__(self) -> str:
        return f"comment {self.forge_id} on {self.issue}"


class SyncRun(models.Model):
    """One collection of a repository over a window: the run a lead watches, with its figures.

    The cursors live in its parts (`SyncPart`): one chain of page tasks each, so several workers
    can share a large repository. The figures here are the sums over the parts, added in the
    transaction that stores each page.

    A run of kind "hydrate" records the fetching of issues known only by URL (the study's URL
    lists): no parts; `pages` counts the issues fetched out of `pages_estimate`.
    """

    class Kind(models.TextChoices):
        SYNC = "sync", _("repository sync")
        HYDRATE = "hydrate", _("issues from URL lists")

    class Status(models.TextChoices):
        QUEUED = "queued", _("queued")
        RUNNING = "running", _("running")
        WAITING = "waiting", _("waiting for the rate limit to reset")
        DONE = "done", _("done")
        FAILED = "failed", _("failed")

    class Phase(models.TextChoices):
        ISSUES = "issues", _("issues")
        COMMENTS = "comments", _("comments")
        NOTES = "notes", _("per-issue comments")
        FINISHED = "finished", _("finished")

    ACTIVE = (Status.QUEUED, Status.RUNNING, Status.WAITING)

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="sync_runs")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.SYNC)
    since = models.DateTimeField(null=True, blank=True, help_text=_("Issues updated since."))
    until = models.DateTimeField(null=True, blank=True, help_text=_("Issues created until."))
    keyword_set = models.ForeignKey(KeywordSet, null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    phase = models.CharField(max_length=10, choices=Phase.choices, default=Phase.ISSUES)
    parts_wanted = models.PositiveSmallIntegerField(
        default=1, help_text=_("Into how many time slices a long listing is split (1 = one chain).")
    )
    # Figures.
    pages = models.PositiveIntegerField(default=0)
    pages_estimate = models.PositiveIntegerField(null=True, blank=True)
    requests = models.PositiveIntegerField(default=0)
    not_modified = models.PositiveIntegerField(default=0)
    retries = models.PositiveIntegerField(default=0)
    rate_limit_waits = models.PositiveIntegerField(default=0)
    issues_seen = models.PositiveIntegerField(default=0)
    issues_new = models.PositiveIntegerField(default=0)
    issues_updated = models.PositiveIntegerField(default=0)
    filtered_in = models.PositiveIntegerField(default=0)
    filtered_out = models.PositiveIntegerField(default=0)
    pull_requests_skipped = models.PositiveIntegerField(default=0)
    comments_seen = models.PositiveIntegerField(default=0)
    comments_skipped = models.PositiveIntegerField(default=0)
    quota_remaining = models.IntegerField(null=True, blank=True)
    quota_reset_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    max_updated_seen = models.DateTimeField(null=True, blank=True)
    # Pages stored per Celery worker (node name), so a lead sees who shares the run.
    worker_pages = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("sync run")
        verbose_name_plural = _("sync runs")
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "heartbeat_at"])]

    def __str__(self) -> str:
        return f"sync {self.pk} of {self.repository}"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def percent(self) -> int | None:
        if self.status == self.Status.DONE:
            return 100
        if not self.pages_estimate:
            return None
        return min(99, round(100 * self.pages / self.pages_estimate))

    @property
    def duration_seconds(self) -> float | None:
        if not self.started_at:
            return None
        end = self.finished_at or self.heartbeat_at or self.started_at
        return (end - self.started_at).total_seconds()

    def figures(self) -> dict[str, object]:
        names = [
            "kind", "status", "phase", "pages", "requests", "not_modified", "retries",
            "rate_limit_waits", "issues_seen", "issues_new", "issues_updated", "filtered_in",
            "filtered_out", "pull_requests_skipped", "comments_seen", "comments_skipped",
            "quota_remaining",
        ]  # fmt: skip
        data: dict[str, object] = {n: getattr(self, n) for n in names}
        if self.pk:
            parts = list(self.parts.values_list("status", flat=True))
            active = sum(s in self.ACTIVE for s in parts)
            data["parts"] = f"{len(parts)} ({active} active)" if active else len(parts)
        data["workers"] = ", ".join(f"{w}: {n}" for w, n in sorted(self.worker_pages.items()))
        data["errors"] = len(self.errors)
        data["seconds"] = round(self.duration_seconds or 0, 2)
        return data


# What each of a run's figures means, for the run's page (the API keeps the names).
FIGURE_LABELS = {
    "kind": _("Kind"),
    "pages": _("Pages fetched"),
    "requests": _("Requests"),
    "not_modified": _("Pages unchanged since the last sync (304)"),
    "retries": _("Retries after an error"),
    "rate_limit_waits": _("Waits for the rate limit"),
    "issues_seen": _("Issues seen"),
    "issues_new": _("New issues"),
    "issues_updated": _("Issues updated"),
    "filtered_in": _("Kept by the keyword filter"),
    "filtered_out": _("Dropped by the keyword filter"),
    "pull_requests_skipped": _("Pull requests skipped"),
    "comments_seen": _("Comments seen"),
    "comments_skipped": _("Comments skipped"),
    "quota_remaining": _("API requests left in this hour"),
    "parts": _("Parts (time slices)"),
    "workers": _("Pages per worker"),
    "errors": _("Errors"),
    "seconds": _("Seconds"),
}


def labeled_figures(run: SyncRun) -> list[tuple[str, object]]:
    """The run's figures under their labels, without the status and phase (shown above them)
    and with "unknown" for a figure the forge has not told yet (e.g. the quota)."""
    unknown = gettext("unknown")
    return [
        (str(FIGURE_LABELS.get(name, name)), unknown if value is None or value == "" else value)
        for name, value in run.figures().items()
        if name not in ("status", "phase")
    ]


class SyncPart(models.Model):
    """One chain of page tasks of a run: a listing, or a time slice of it, with its own cursor.

    `phase`, `next_url` and `notes_pending` are the cursor: they are saved in the transaction
    that stores a page, so a worker killed mid-part resumes at the first page not yet stored.
    `chain` is the token of the one live task of the part; it changes with every stored page, so
    a duplicate or stale task stops instead of walking the same pages beside the live one.
    """

    run = models.ForeignKey(SyncRun, on_delete=models.CASCADE, related_name="parts")
    listing = models.CharField(
        max_length=10,
        choices=[
            (SyncRun.Phase.ISSUES, pgettext_lazy("a forge listing", "issues")),
            (SyncRun.Phase.COMMENTS, pgettext_lazy("a forge listing", "comments")),
        ],
        default=SyncRun.Phase.ISSUES,
    )
    phase = models.CharField(
        max_length=10, choices=SyncRun.Phase.choices, default=SyncRun.Phase.ISSUES
    )
    status = models.CharField(
        max_length=10, choices=SyncRun.Status.choices, default=SyncRun.Status.QUEUED
    )
    # The part's slice of the listing: items updated in [window_start, window_end). A listing's
    # first part has no start (the run's `since`); the last part of a split has no end.
    window_start = models.DateTimeField(null=True, blank=True)
    window_end = models.DateTimeField(null=True, blank=True)
    next_url = models.TextField(blank=True, help_text=_("Next page of the part (no token)."))
    notes_pending = models.JSONField(default=list, blank=True)
    chain = models.CharField(max_length=32, blank=True)
    pages = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("sync part")
        verbose_name_plural = _("sync parts")
        ordering = ["run", "id"]
        indexes = [models.Index(fields=["status", "heartbeat_at"])]

    def __str__(self) -> str:
        return f"part {self.pk} ({self.listing}) of sync {self.run_id}"

    @property
    def is_active(self) -> bool:
        return self.status in SyncRun.ACTIVE


class PageETag(models.Model):
    """The ETag of a page already stored, sent back as If-None-Match (a 304 costs no quota)."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="etags")
    url = models.TextField(help_text=_("The page URL without any token."))
    etag = models.CharField(max_length=200)
    # A 304 has no body, so the page's own next link is kept with its ETag, and the newest
    # update on it (a time slice of a split run ends on the page that passes its end).
    next_url = models.TextField(blank=True)
    max_updated_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("page ETag")
        verbose_name_plural = _("page ETags")
        constraints = [
            models.UniqueConstraint(fields=["repository", "url"], name="unique_etag_per_page")
        ]

    def __str__(self) -> str:
        return f"{self.etag} {self.url}"
