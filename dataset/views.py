"""Export pages: start a ZIP export, watch its progress (htmx polling), download it."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404, redirect, render

from annotator.permissions import membership_or_404
from dataset.exports import export_path
from dataset.models import ExportJob
from dataset.permissions import (
    EXPORT_ROLES,
    can_export_everything,
    can_use_real_names,
    visible_exports,
)
from dataset.tasks import start_export


@login_required
def exports(request, project_id: int):
    membership = membership_or_404(request.user, project_id, roles=EXPORT_ROLES)
    project = membership.project
    if request.method == "POST":
        real_names = can_use_real_names(membership) and request.POST.get("real_names") == "on"
        everything = can_export_everything(membership) and request.POST.get("everything") == "on"
        job = start_export(project, request.user, real_names=real_names, everything=everything)
        if request.htmx:
            return render(
                request, "dataset/_job.html", {"project": project, "job": job, "created": True}
            )
        return redirect("exports", project_id=project.pk)
    jobs = visible_exports(membership)[:10]
    return render(
        request,
        "dataset/exports.html",
        {
            "project": project,
            "jobs": jobs,
            "may_use_real_names": can_use_real_names(membership),
            "may_export_everything": can_export_everything(membership),
        },
    )


@login_required
def export_job(request, project_id: int, job_id: int):
    membership = membership_or_404(request.user, project_id, roles=EXPORT_ROLES)
    job = get_object_or_404(visible_exports(membership), pk=job_id)
    return render(request, "dataset/_job.html", {"project": membership.project, "job": job})


@login_required
def export_download(request, project_id: int, job_id: int):
    membership = membership_or_404(request.user, project_id, roles=EXPORT_ROLES)
    job = get_object_or_404(visible_exports(membership), pk=job_id, status=ExportJob.Status.DONE)
    path = export_path(job)
    if not path.exists():
        raise Http404
    return FileResponse(open(path, "rb"), as_attachment=True, filename=job.filename)
