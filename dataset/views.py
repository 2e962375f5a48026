"""Export pages: start a ZIP export, watch its progress (htmx polling), download it."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404, redirect, render

from annotator.models import LEAD_ROLES, Role
from annotator.permissions import membership_or_404
from dataset.exports import export_path
from dataset.models import ExportJob
from dataset.tasks import start_export

# Exports hold every annotation (pseudonymous): not for annotators, who are blind to others.
EXPORT_ROLES = (Role.LEAD, Role.ADMIN, Role.RESEARCHER)


def can_use_real_names(membership) -> bool:
    return membership.role == Role.ADMIN or membership.user.is_superuser


def can_export_everything(membership) -> bool:
    """Leads and admins may export every issue; a researcher's export holds the final issues
    only, as the API shows them."""
    return membership.role in LEAD_ROLES or membership.user.is_superuser


def visible_exports(membership):
    """The project's export jobs this member may see: exports with real names are for admins,
    exports of every issue for leads and admins."""
    jobs = ExportJob.objects.filter(project=membership.project)
    if not can_use_real_names(membership):
        jobs = jobs.filter(real_names=False)
    if not can_export_everything(membership):
        jobs = jobs.filter(everything=False)
    return jobs


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
