"""Forge data: repositories and their issues with discussions, as collected from the forges."""

from __future__ import annotations

from django.db import models


class Repository(models.Model):
    class Forge(models.TextChoices):
        GITHUB = "github", "GitHub"
        GITEE = "gitee", "Gitee"
        GITLAB = "gitlab", "GitLab"

    DEFAULT_API_URLS = {
        Forge.GITHUB: "https://api.github.com",
        Forge.GITEE: "https://gitee.com/api/v5",
        Forge.GITLAB: "https://gitlab.com/api/v4",
    }
    WEB_HOSTS = {Forge.GITHUB: "github.com", Forge.GITEE: "gitee.com", Forge.GITLAB: "gitlab.com"}

    forge = models.CharField(max_length=10, choices=Forge.choices)
    # Per repository, so GitHub Enterprise, a self-hosted GitLab or the test fake can be used.
    api_url = models.URLField(max_length=300)
    owner = models.CharField(max_length=200, help_text="owner, or the GitLab group path")
    name = models.CharField(max_length=200)
    group = models.CharField(
        max_length=100,
        blank=True,
        help_text='The study group it belongs to, e.g. framework "PyTorch" or toolkit "vLLM".',
    )
    is_framework = models.BooleanField(
        default=False, help_text="Framework repositories are keyword-filtered; toolkits keep all."
    )
    include_pull_requests = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "repositories"
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
    def web_url(self) -> str:
        return f"https://{self.WEB_HOSTS[self.forge]}/{self.full_name}"


class Issue(models.Model):
    class FilterStatus(models.TextChoices):
        NOT_FILTERED = "not_filtered", "not filtered (toolkit: every issue kept)"
        KEPT = "kept", "kept by the keyword filter"
        FILTERED_OUT = "filtered_out", "filtered out by the keyword filter"

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="issues")
    # Text, since Gitee numbers look like IBD6YU (and are case-sensitive).
    number = models.CharField(max_length=32)
    url = models.URLField(max_length=500, unique=True)
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

    class Meta:
        ordering = ["repository", "created_at"]
        constraints = [
            models.UniqueConstraint(fields=["repository", "number"], name="unique_issue_number")
        ]
        indexes = [
            models.Index(fields=["repository", "updated_at"]),
            models.Index(fields=["repository", "filter_status"]),
        ]

    def __str__(self) -> str:
        return f"{self.repository.full_name}#{self.number}"


class Comment(models.Model):
    issue = models.ForeignKey(Issue, on_delete=models.CASCADE, related_name="comments")
    forge_id = models.CharField(max_length=64)
    author = models.CharField(max_length=200, blank=True)
    body = models.TextField(blank=True)
    created_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    raw = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["issue", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["issue", "forge_id"], name="unique_comment_per_issue")
        ]

    def __str__(self) -> str:
        return f"comment {self.forge_id} on {self.issue}"
