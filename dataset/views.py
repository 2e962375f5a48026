"""Export pages: start a ZIP export, watch its progress (htmx polling), download it."""

from __future__ import annotations

import io

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from annotator.permissions import membership_or_404
from dataset.exports import ExportContext, export_path, start_export, write_taxonomy_details
from dataset.models import ExportJob
from dataset.permissions import (
    EXPORT_ROLES,
    can_export_everything,
    can_use_real_names,
    visible_exports,
)
from lib import superseded
from lib.requests import AuthedRequest
from taxonomy.detail_files import study_file_name


@login_required
def exports(request: AuthedRequest, project_id: int) -> HttpResponse:
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
    # A failed export followed by a done one of the same kind is marked as older.
    jobs = superseded.mark(
        visible_exports(membership)[:10],
        key=lambda job: (job.real_names, job.everything),
        failed=ExportJob.Status.FAILED,
        done=ExportJob.Status.DONE,
    )
    return render(
        request,
        "dataset/exports.html",
        {
            "project": project,
            "jobs": jobs,
            "may_use_real_names": can_use_real_names(membership),
            "may_export_everything": can_export_everything(membership),
            "types": project.taxonomy_version.types().order_by("position"),
        },
    )


@login_required
def export_details_csv(request: AuthedRequest, project_id: int, type_code: str) -> HttpResponse:
    """One taxonomy detail file as the export writes it, for whoever may export: the version's
    details and the annotators' summaries of the issues this member's export would hold (final
    issues for a researcher, every issue for a lead)."""
    membership = membership_or_404(request.user, project_id, roles=EXPORT_ROLES)
    project = membership.project
    if not project.taxonomy_version.types().filter(code=type_code).exists():
        raise Http404
    out = io.StringIO()
    context = ExportContext(project, everything=can_export_everything(membership))
    write_taxonomy_details(context, type_code, out)
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    filename = study_file_name(type_code)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
def export_job(request: AuthedRequest, project_id: int, job_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=EXPORT_ROLES)
    job = get_object_or_404(visible_exports(membership), pk=job_id)
    return render(request, "dataset/_job.html", {"project": membership.project, "job": job})


@login_required
def export_download(request: AuthedRequest, project_id: int, job_id: int) -> FileResponse:
    membership = membership_or_404(request.user, project_id, roles=EXPORT_ROLES)
    job = get_object_or_404(visible_exports(membership), pk=job_id, status=ExportJob.Status.DONE)
    path = export_path(job)
    if not path.exists():
        raise Http404
    return FileResponse(open(path, "rb"), as_attachment=True, filename=job.filename)
