"""The filter-recall page: the report of the keyword filter's estimated recall (leads, admins
and researchers), the form that draws recall probes, and the classifier's ranking of the dropped
issues with a button that adds one to the queue (leads and admins). The ranking is read as a
job stored it (`dataset.beyond_keywords.ranking_state`), never fitted in a request: a lead
starts the job where none is ready, and the ranking's card polls (htmx) while it runs."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext, ngettext
from django.views.decorators.http import require_POST

from annotator.models import Membership
from annotator.permissions import membership_or_404
from dataset.beyond_keywords import (
    RankingState,
    add_dropped_issue,
    check_trainable,
    ranking_key,
    ranking_state,
    start_ranking,
)
from dataset.forms import AddDroppedIssueForm, RecallDrawForm
from dataset.permissions import RECALL_ROLES, can_draw_probes
from dataset.recall import candidate_ids, draw_probes, dropped_population, recall_report
from lib.refusal import Refusal, call_with_form
from lib.requests import AuthedRequest


@login_required
def filter_recall(request: AuthedRequest, project_id: int) -> HttpResponse:
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
    request: HttpRequest,
    membership: Membership,
    *,
    form: RecallDrawForm | None = None,
    add_form: AddDroppedIssueForm | None = None,
    rank_error: str = "",
    status: int = 200,
) -> HttpResponse:  # the page, with the stored ranking for those who may add from it
    may_draw = can_draw_probes(membership)
    # The dropped issues, read once for the report and the ranking.
    population = dropped_population(membership.project)
    report = recall_report(membership.project, population)
    ranking: RankingState | None = None
    if may_draw:
        ranking = ranking_state(membership.project, dropped=candidate_ids(population[1]))
    return render(
        request,
        "dataset/recall.html",
        {
            "project": membership.project,
            "report": report,
            "form": form or RecallDrawForm(),
            "may_draw": may_draw,
            "ranking": ranking,
            "rank_error": rank_error,
            "add_form": add_form or AddDroppedIssueForm(),
        },
        status=status,
    )


def _lead(request: AuthedRequest, project_id: int) -> Membership:
    membership = membership_or_404(request.user, project_id, roles=RECALL_ROLES)
    if not can_draw_probes(membership):
        raise Http404
    return membership


@login_required
def ranking(request: AuthedRequest, project_id: int) -> HttpResponse:
    """The ranking's card alone: what the page polls while the job runs."""
    membership = _lead(request, project_id)
    return render(
        request,
        "dataset/_ranking.html",
        {
            "project": membership.project,
            "ranking": ranking_state(membership.project),
            "add_form": AddDroppedIssueForm(),
        },
    )


@login_required
@require_POST
def rank(request: AuthedRequest, project_id: int) -> HttpResponse:
    """A lead asks for the ranking of the current classifier rater version (or, with none
    trained, of the project's final labels): the job is queued, never run here."""
    membership = _lead(request, project_id)
    project = membership.project
    try:
        check_trainable(project)
    except Refusal as exc:
        return _page(request, membership, rank_error=exc.message, status=400)
    rater, version = ranking_key(project)
    start_ranking(project, rater, version, request.user)
    return redirect(reverse("filter_recall", args=[project_id]) + "#recall-ranking")


@login_required
@require_POST
def add_dropped(request: AuthedRequest, project_id: int) -> HttpResponse:
    """A lead adds one dropped issue of the ranking to the project's queue."""
    membership = _lead(request, project_id)
    form = AddDroppedIssueForm(request.POST)
    if form.is_valid():
        try:
            add_dropped_issue(membership.project, form.cleaned_data["issue"])
        except Refusal as exc:
            form.add_error("issue", exc.message)
        else:
            messages.success(request, gettext("The issue joined the queue."))
            return redirect(reverse("filter_recall", args=[project_id]) + "#recall-ranking")
    return _page(request, membership, add_form=form, status=400)
