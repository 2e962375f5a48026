"""Export jobs: a ZIP of the dataset built in the background, with progress and a download."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ExportJob(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "queued"
        RUNNING = "running", "running"
        DONE = "done", "ready"
        FAILED = "failed", "failed"

    project = models.ForeignKey(
        "annotator.Project", on_delete=models.CASCADE, related_name="export_jobs"
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Annotators appear under their pseudonyms unless an admin asks for real names.
    real_names = models.BooleanField(default=False)
    # Final issues only (what the API shows a researcher) unless a lead or admin asks for every
    # issue; the study CSVs then carry a Status column.
    everything = models.BooleanField(default=False)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    progress = models.PositiveSmallIntegerField(default=0, help_text="percent")
    step = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)
    # Relative to settings.EXPORT_ROOT; never a user-supplied path.
    file_path = models.CharField(max_length=300, blank=True)
    size = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"export {self.pk} of {self.project} ({self.status})"

    @property
    def filename(self) -> str:
        return f"export-{self.project_id}-{self.pk}.zip"
