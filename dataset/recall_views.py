"""The filter-recall page: the report of the keyword filter's estimated recall (leads, admins
and researchers), the form that draws recall probes, and the classifier's ranking of the dropped
issues with a button that adds one to the queue (leads and admins)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext, ngettext
from django.views.decorators.http import require_POST

from annotator.permissions import membership_or_404
from dataset.beyond_keywords import Candidate, add_dropped_issue, rank_dropped
from dataset.forms import AddDroppedIssueForm, RecallDrawForm
from dataset.permissions import RECALL_ROLES, can_draw_probes
from dataset.recall import draw_probes, recall_report
from lib.refusal import Refusal, call_with_form


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
                ngettext(
                    "Draw %(number)s: %(size)s dropped issue added to the queue (seed %(seed)s).",
                    "Draw %(number)s: %(size)s dropped issues added to the queue (seed %(seed)s).",
                    draw.size,
                )
                % {"number": draw.number, "size": draw.size, "seed": draw.seed},
            )
            return redirect("filter_recall", project_id=project.pk)
        status = 400
    return _page(request, membership, form=form, status=status)


def _page(
    request, membership, *, form=None, add_form=None, status: int = 200
):  # the page, with the ranking when a lead asked for it (`?rank=1`)
    may_draw = can_draw_probes(membership)
    ranking: list[Candidate] | None = None
    rank_error = ""
    if may_draw and (request.GET.get("rank") or add_form is not None):
        try:
            ranking = rank_dropped(membership.project)
        except Refusal as exc:
            rank_error = exc.message
    return render(
        request,
        "dataset/recall.html",
        {
            "project": membership.project,
            "report": recall_report(membership.project),
            "form": form or RecallDrawForm(),
            "may_draw": may_draw,
            "ranking": ranking,
            "rank_error": rank_error,
            "add_form": add_form or AddDroppedIssueForm(),
        },
        status=status,
    )


@login_required
@require_POST
def add_dropped(request, project_id: int):
    """A lead adds one dropped issue of the ranking to the project's queue."""
    membership = membership_or_404(request.user, project_id, roles=RECALL_ROLES)
    if not can_draw_probes(membership):
        raise Http404
    form = AddDroppedIssueForm(request.POST)
    if form.is_valid():
        try:
            add_dropped_issue(membership.project, form.cleaned_data["issue"])
        except Refusal as exc:
            form.add_error("issue", exc.message)
        else:
            messages.success(request, gettext("The issue joined the queue."))
            return redirect(reverse("filter_recall", args=[project_id]) + "?rank=1#recall-ranking")
    return _page(request, membership, add_form=form, status=400)
