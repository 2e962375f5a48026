"""The project's guideline page: every member who labels reads it; a lead edits it, with a
preview rendered by the same sanitiser as the labeling page (a button, or htmx as they type)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext

from annotator.models import LEAD_ROLES
from annotator.permissions import membership_or_404
from labeling import guideline
from labeling.forms import GuidelineForm
from lib.requests import AuthedRequest


@login_required
def project_guideline(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=guideline.GUIDELINE_ROLES)
    project = membership.project
    can_edit = membership.role in LEAD_ROLES
    preview = None
    status = 200
    if request.method == "POST":
        if not can_edit:
            raise Http404  # as for any page a role cannot open
        form = GuidelineForm(request.POST)
        if form.is_valid():
            text = form.cleaned_data["guideline"]
            if request.htmx or "preview" in request.POST:
                preview = guideline.render(text)
            else:
                guideline.save(project, text)
                messages.success(request, gettext("Guideline saved."))
                return redirect("project_guideline", project_id=project.pk)
        else:
            status = 400
        if request.htmx:
            # A 200 even for a refused text: htmx swaps in only successful responses, and the
            # fragment is where the lead reads the error while typing.
            return render(
                request,
                "labeling/_guideline_preview.html",
                {"preview": preview, "form": form, "previewed": True},
            )
    else:
        form = GuidelineForm(initial={"guideline": project.guideline})
    context = {
        "project": project,
        "current": guideline.render(project.guideline),
        "form": form if can_edit else None,
        "preview": preview,
        "previewed": preview is not None or "preview" in request.POST,
    }
    return render(request, "labeling/guideline.html", context, status=status)
