"""The filter-recall page: the report of the keyword filter's estimated recall (leads, admins
and researchers) and the form that draws recall probes (leads and admins)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render

from annotator.permissions import membership_or_404
from dataset.forms import RecallDrawForm
from dataset.formviews import call_with_form
from dataset.permissions import RECALL_ROLES, can_draw_probes
from dataset.recall import draw_probes, recall_report


@login_required
def filter_recall(request, project_id: int):
    membership = membership_or_404(request.user, project_id, roles=RECALL_ROLES)
    project = membership.project
    may_draw = can_draw_probes(membership)
    form = RecallDrawForm()
    status = 200
    if request.method == "POST":
        if not may_draw:
            raise Http404
        form = RecallDrawForm(request.POST)
        draw = call_with_form(
            form,
            lambda data: draw_probes(
                project,
                sample_size=data["sample_size"],
                margin=data["margin"],
                seed=data["seed"],
                drawn_by=request.user,
            ),
        )
        if draw is not None:
            messages.success(
                request,
                f"Draw {draw.number}: {draw.size} dropped issues added to the queue "
                f"(seed {draw.seed}).",
            )
            return redirect("filter_recall", project_id=project.pk)
        status = 400
    return render(
        request,
        "dataset/recall.html",
        {
            "project": project,
            "report": recall_report(project),
            "form": form,
            "may_draw": may_draw,
        },
        status=status,
    )
