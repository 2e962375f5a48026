"""The upload page: a lead uploads a file of issues, previews it, checks it (a dry run) or
imports it, and watches the job (htmx polling). The work is `dataset.uploads`."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from annotator.permissions import membership_or_404
from dataset.forms import UploadIssuesForm
from dataset.models import UploadJob
from dataset.permissions import UPLOAD_ROLES
from dataset.uploads import preview, start_upload
from ingest.issue_files import KINDS, preview_rows
from lib.requests import AuthedRequest

RECENT_JOBS = 10


@login_required
def upload_issues(request: AuthedRequest, project_id: int) -> HttpResponse:
    project = membership_or_404(request.user, project_id, roles=UPLOAD_ROLES).project
    form = UploadIssuesForm(request.POST or None, request.FILES or None)
    context: dict[str, object] = {"project": project, "form": form}
    status = 200
    if request.method == "POST":
        if not form.is_valid():
            status = 400
        elif form.cleaned_data["action"] == "preview":
            reading = preview(form.cleaned_data["file"], form.cleaned_data["kind"])
            context["reading"] = reading
            context["kind_name"] = str(KINDS.get(reading.kind, reading.kind))
            context["rows"] = preview_rows(reading)
            if request.htmx:
                return render(request, "dataset/_upload_preview.html", context)
        else:
            data = form.cleaned_data
            start_upload(
                project,
                request.user,
                data["file"],
                kind=data["kind"],
                source=data["source"],
                dry_run=data["action"] == "dry_run",
                add_to_queue=data["add_to_queue"],
                fetch=data["fetch"],
            )
            return redirect("upload_issues", project_id=project.pk)
    context["jobs"] = UploadJob.objects.filter(project=project)[:RECENT_JOBS]
    return render(request, "dataset/upload.html", context, status=status)


@login_required
def upload_job(request: AuthedRequest, project_id: int, job_id: int) -> HttpResponse:
    """One job's state: the fragment the page polls while the job runs."""
    project = membership_or_404(request.user, project_id, roles=UPLOAD_ROLES).project
    job = get_object_or_404(UploadJob, project=project, pk=job_id)
    return render(request, "dataset/_upload_job.html", {"project": project, "job": job})
