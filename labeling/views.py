"""Pages for labeling, progress, project setup and the lead's disagreement queue.

Thin views: each looks the project up through `membership_or_404`, parses input, calls a
function of `labeling.queue`, `labeling`, `resolution` or `setup`, and renders. An issue page
an annotator has no business seeing is a 404, the same as an issue that does not exist.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from csp.decorators import csp_update
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_POST

from annotator.models import LEAD_ROLES, Project
from annotator.permissions import membership_or_404
from ingest.models import Issue, Repository
from ingest.permissions import is_ingest_admin
from labeling import guideline, queue, resolution, setup, submission
from labeling.forms import (
    LeadActionForm,
    QueueFilterForm,
    first_error,
    setup_form,
)
from labeling.issue_context import (
    description_language,
    issue_context,
    label_choices,
    taxonomy_nodes,
    taxonomy_payload,
)
from labeling.models import (
    RESOLUTION_METHOD_MEANINGS,
    Annotation,
    FalsePositiveReason,
    ProjectIssue,
    Resolution,
)
from labeling.permissions import LABELER_ROLES, scope_repositories
from labeling.votes import vote_table
from lib import sql
from lib.inputlimits import row_id
from lib.refusal import Refusal
from lib.requests import AuthedRequest
from taxonomy.models import TaxonomyNode

# Table names from the models (`Meta.db_table`), never spelled out in the SQL below.
_PROJECTISSUE_TABLE = ProjectIssue._meta.db_table
_ISSUE_TABLE = Issue._meta.db_table
_REPOSITORY_TABLE = Repository._meta.db_table

_View = TypeVar("_View", bound=Callable[..., Any])

# Issue images load only on a click, from anywhere: allow them on issue pages alone.
# (django-csp types its decorators for views that take only the request.)
_issue_images: Callable[[_View], _View] = cast(Any, csp_update({"img-src": ["https:", "http:"]}))


# The labeling page's issue with its repository, the raw forge payload left out: a prepared
# statement (see lib.sql), since every issue a volunteer labels opens this page.
# Lead pages name an item by its row id; labeling pages by its random public id (F4 of #20:
# row ids grow with time, so a late-drawn recall probe would stand out in an annotator's URLs).
_ITEM_SQL = (
    f"SELECT {sql.columns(ProjectIssue, 'pi')}, {sql.columns(Issue, 'i', defer=('raw',))},"
    f" {sql.columns(Repository, 'r')} FROM {_PROJECTISSUE_TABLE} pi"
    f" JOIN {_ISSUE_TABLE} i ON i.id = pi.issue_id"
    f" JOIN {_REPOSITORY_TABLE} r ON r.id = i.repository_id"
    " WHERE pi.{column} = %(item)s AND pi.project_id = %(project)s"
)
_ITEM_BY_ID_SQL = _ITEM_SQL.replace("{column}", "id")
_ITEM_BY_PUBLIC_ID_SQL = _ITEM_SQL.replace("{column}", "public_id")
_ITEM_ID_SQL = (
    f"SELECT pi.id FROM {_PROJECTISSUE_TABLE} pi"
    " WHERE pi.public_id = %(item)s AND pi.project_id = %(project)s"
)
_PUBLIC_ID_SQL = f"SELECT pi.public_id FROM {_PROJECTISSUE_TABLE} pi WHERE pi.id = %(item)s"


def _item_id(project: Project, public_id: int | None) -> int | None:
    """The row id of the project's item with this public id, or None."""
    if public_id is None or not sql.is_row_id(public_id):
        return None
    row = sql.first(_ITEM_ID_SQL, {"item": public_id, "project": project.pk})
    return None if row is None else row[0]


def _public_id(item_id: int) -> int:
    row = sql.first(_PUBLIC_ID_SQL, {"item": item_id})
    assert row is not None  # an id the queue or the annotator's own labels just gave
    return row[0]


def _project_issue_or_404(project: Project, item_id: int, *, public: bool = False) -> ProjectIssue:
    """The project's item by row id (lead pages) or by public id (`public`, labeling pages)."""
    if not sql.is_row_id(item_id):
        raise Http404
    statement = _ITEM_BY_PUBLIC_ID_SQL if public else _ITEM_BY_ID_SQL
    row = sql.first(statement, {"item": item_id, "project": project.pk})
    if row is None:
        raise Http404
    item, at = sql.model_from_row(ProjectIssue, row)
    issue, at = sql.model_from_row(Issue, row, at, defer=("raw",))
    issue.repository, _ = sql.model_from_row(Repository, row, at)
    item.issue = issue
    item.project = project
    return item


@login_required
def label_next(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=LABELER_ROLES)
    # The queue hands back the item's public id with it: no look-up before the redirect.
    item = queue.next_item_for(request.user, membership.project)
    if item is None:
        progress = submission.progress_of(request.user, membership.project)
        return render(
            request,
            "labeling/nothing_left.html",
            {"project": membership.project, "progress": progress},
        )
    return redirect("label_issue", project_id=project_id, public_id=item.public_id)


@login_required
@_issue_images
def label_issue(request: AuthedRequest, project_id: int, public_id: int) -> HttpResponse:
    """The labeling page of one queue item, named by its public id."""
    membership = membership_or_404(request.user, project_id, roles=LABELER_ROLES)
    project = membership.project
    error = None
    if request.method == "POST":
        # A submission needs only the public id (`submit` locks and reads the row by it, and
        # raises NotYours for an issue that is not the project's); the issue itself is loaded
        # only to show the form again with an error.
        try:
            label = submission.parse_label(project, request.POST)
            submission.submit(request.user, project, public_id, label, public=True)
        except submission.NotYours:
            raise Http404 from None
        except Refusal as exc:
            error = exc
        else:
            # No flash message: it would cost a session write on every submission.
            return redirect("label_next", project_id=project_id)
    item = _project_issue_or_404(project, public_id, public=True)
    # (A valid POST was checked by `submit`, which raises NotYours for an issue not theirs.)
    own = submission.own_annotation(request.user, item)
    # One's own label is enough to open the page; only without one is the reservation checked.
    reservation = None if own else queue.reservation_of(request.user, item)
    if own is None and not queue.was_handed(reservation):
        raise Http404
    is_final = item.status == ProjectIssue.Status.FINAL
    # Locked once the issue has its K labels; shown the same whatever the others chose.
    locked = own is not None and not is_final and submission.is_locked(item, project)
    context = {
        "project": project,
        "item": item,
        "own": own,
        "initial": (initial := _initial(request.POST if error else None, own)),
        **label_choices(project.taxonomy_version_id, initial),
        "error": error,
        "is_final": is_final,
        "locked": locked,
        "my_messages": resolution.own_messages(item, request.user) if own else (),
        # Blind until final: only the final label, never the other annotations.
        "final": resolution.current_resolution(item) if is_final else None,
        "reservation": reservation if reservation and reservation.skipped_at is None else None,
        "progress": submission.progress_of(request.user, project),
        "fp_reasons": FalsePositiveReason.choices,
        "taxonomy": taxonomy_nodes(project.taxonomy_version_id),
        "guideline": guideline.render(project.guideline),
        **issue_context(item.issue),
    }
    return render(request, "labeling/label.html", context, status=400 if error else 200)


@login_required
def label_previous(request: AuthedRequest, project_id: int) -> HttpResponse:
    """One step back: the issue this annotator labeled before the one they come from
    (`?from=<public id>`), to read or revise it while it is not locked."""
    membership = membership_or_404(request.user, project_id, roles=LABELER_ROLES)
    came_from = row_id(request.GET.get("from"))
    from_item = _item_id(membership.project, came_from)
    previous = submission.previous_item_id(request.user, membership.project, from_item)
    if previous is None:
        messages.info(request, gettext("You have not labeled an issue before this one."))
        if from_item is not None:
            return redirect("label_issue", project_id=project_id, public_id=came_from)
        return redirect("label_next", project_id=project_id)
    return redirect("label_issue", project_id=project_id, public_id=_public_id(previous))


@login_required
@require_POST
def request_change(request: AuthedRequest, project_id: int, public_id: int) -> HttpResponse:
    """An annotator asks the lead to change their label of a locked or a final issue (nothing
    else changes; the lead sees it in the disagreement queue's change requests)."""
    membership = membership_or_404(request.user, project_id, roles=LABELER_ROLES)
    item = _project_issue_or_404(membership.project, public_id, public=True)
    if submission.own_annotation(request.user, item) is None:
        raise Http404  # as for an issue that was never theirs
    try:
        resolution.request_change(item, request.user, request.POST.get("body", ""))
    except Refusal as exc:
        messages.error(request, gettext("Not sent: %(error)s") % {"error": exc})
    else:
        messages.success(request, gettext("Sent to the lead."))
    return redirect("label_issue", project_id=project_id, public_id=public_id)


@login_required
@cache_control(private=True, max_age=3600)
def label_taxonomy(request: AuthedRequest, project_id: int, version_id: int) -> HttpResponse:
    """The taxonomy with its descriptions and example details, for the sub-theme search and the
    taxonomy panel (fetched once, cached).

    Kept out of the labeling page: the details are most of its weight, and they never change
    within a taxonomy version, whose id is in the URL. The page adds the reader's language and
    the project's description setting as a query (ignored here: the request decides), so that
    switching either one is a new URL, not an hour of the browser's cached answer.
    """
    membership = membership_or_404(request.user, project_id)
    if membership.project.taxonomy_version_id != version_id:
        raise Http404
    language = description_language(membership.project)
    return JsonResponse({"nodes": taxonomy_payload(version_id, language)})


@login_required
@require_POST
def skip_issue(request: AuthedRequest, project_id: int, public_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=LABELER_ROLES)
    item = _project_issue_or_404(membership.project, public_id, public=True)
    if not queue.skip(request.user, item):
        raise Http404
    return redirect("label_next", project_id=project_id)


@login_required
def my_progress(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=LABELER_ROLES)
    project = membership.project
    progress = submission.progress_of(request.user, project, with_agreement=True)
    rows = Paginator(submission.my_annotations(request.user, project), 100).get_page(
        request.GET.get("page")
    )
    return render(
        request,
        "labeling/my_progress.html",
        {
            "project": project,
            "progress": progress,
            "shares": submission.agreement_shares(progress),
            "rows": rows,
        },
    )


@login_required
def project_setup(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=LEAD_ROLES)
    project = membership.project
    repositories = scope_repositories(request.user, project)
    if request.method == "POST":
        form = setup_form(
            request.POST,
            repositories=repositories,
            every_repository=is_ingest_admin(request.user),
        )
        if not form.is_valid():
            messages.error(request, gettext("Not saved: %(error)s") % {"error": first_error(form)})
        else:
            try:
                done = setup.apply_setup_action(project, form.setup_action())
            except Refusal as exc:
                messages.error(request, gettext("Not saved: %(error)s") % {"error": exc})
            else:
                messages.success(request, done.message)
                if done.warning:
                    messages.warning(request, done.warning)
        return redirect("project_setup", project_id=project_id)
    saved_scope = project.scope or {}
    return render(
        request,
        "labeling/setup.html",
        {
            "project": project,
            "repositories": repositories,
            "filter_statuses": Issue.FilterStatus.choices,
            "policies": Project.Policy.choices,
            "stopping_rules": Project.StoppingRule.choices,
            "stopping_warning": setup.stopping_warning(project),
            "scope": saved_scope,
            "pilot_count": ProjectIssue.objects.filter(project=project, is_pilot=True).count(),
            "issue_count": ProjectIssue.objects.filter(project=project).count(),
        },
    )


@login_required
def disagreement_queue(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=LEAD_ROLES)
    project = membership.project
    filter_form = QueueFilterForm(request.GET)
    page = Paginator(filter_form.queue(project), 50).get_page(request.GET.get("page"))
    context = {
        "project": project,
        "page": page,
        "filters": filter_form.values(),
        "filter_query": filter_form.query_string(),
        "levels": resolution.LEVEL_NAMES,
        "types": TaxonomyNode.objects.filter(
            version_id=project.taxonomy_version_id, level=TaxonomyNode.Level.TYPE
        ),
        "repositories": Repository.objects.filter(
            issues__project_issues__project=project
        ).distinct(),
        "late_requests": resolution.late_change_requests(project).filter(
            project_issue__status=ProjectIssue.Status.FINAL
        ),
    }
    template = "labeling/_queue_rows.html" if request.htmx else "labeling/queue.html"
    return render(request, template, context)


@login_required
@_issue_images
def resolve_issue(request: AuthedRequest, project_id: int, item_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=LEAD_ROLES)
    project = membership.project
    item = _project_issue_or_404(project, item_id)
    # The queue's filters ride along in the query string, so "Record and next" goes on in the
    # order and the selection the lead was working through.
    filter_form = QueueFilterForm(request.GET)
    query = filter_form.query_string()
    here = reverse("resolve_issue", args=[project_id, item_id]) + (f"?{query}" if query else "")
    posted: dict[str, Any] | None = None  # the refused POST: its data, field and error
    if request.method == "POST":
        form = LeadActionForm(request.POST, project=project)
        error, field = "", ""
        if not form.is_valid():
            error, field = first_error(form), next(iter(form.errors), "")
        else:
            try:
                done = resolution.apply_lead_action(item, request.user, form.lead_action())
            except Refusal as exc:
                error, field = str(exc), exc.field
        if error:
            # Refused: the page again (400) with the lead's choices kept and the error said at
            # the top and beside its field (the method's: no default, no consensus without a
            # discussion).
            messages.error(request, gettext("Not saved: %(error)s") % {"error": error})
            posted = {"data": request.POST, "field": field, "error": error}
        else:
            if done:
                messages.success(request, done)
            if request.POST.get("then") == "next":
                following = filter_form.queue(project).exclude(pk=item.pk).first()
                if following is not None:
                    return redirect(
                        reverse("resolve_issue", args=[project_id, following.pk])
                        + (f"?{query}" if query else "")
                    )
                messages.info(request, gettext("No disagreement left with these filters."))
                queue_url = reverse("disagreement_queue", args=[project_id])
                return redirect(queue_url + (f"?{query}" if query else ""))
            return redirect(here)
    annotations = resolution.current_annotations(item)
    comparison = resolution.compare(annotations, project.annotations_per_issue)
    data = posted["data"] if posted and posted["data"].get("action") == "resolve" else None
    initial = _initial(data, None)
    discussion = item.discussion.select_related("author")
    context = {
        "project": project,
        "item": item,
        "annotations": annotations,
        "votes": vote_table(comparison, project.taxonomy_version_id),
        "comparison": comparison,
        "level_name": resolution.LEVEL_NAMES.get(comparison.first_disagreement, ""),
        "final": resolution.current_resolution(item),
        "history": resolution.resolution_history(item),
        "machine_labels": resolution.machine_opinions(item),
        "based_on": _based_on(resolution.current_resolution(item)),
        "revisions": submission.revisions(project, item.issue_id),
        "discussion": discussion,
        "methods": _lead_methods(item, data),
        "method_error": posted["error"] if posted and posted["field"] == "method" else "",
        "source": (data.get("source") or "new") if data else "new",
        "resolve_note": data.get("note", "") if data else "",
        "initial": initial,
        "fp_reasons": FalsePositiveReason.choices,
        "filter_query": query,
        # What is left in the queue with these filters, this issue included while it waits.
        "left": filter_form.queue(project).count(),
        "taxonomy": taxonomy_nodes(project.taxonomy_version_id),
        **label_choices(project.taxonomy_version_id, initial),
        **issue_context(item.issue),
    }
    status = 400 if posted else 200
    return render(request, "labeling/resolve.html", context, status=status)


def _lead_methods(item: ProjectIssue, posted: QueryDict | None) -> list[dict]:
    """The methods a lead may record on the resolve page, each with its key, what it means,
    whether it applies to the issue as it stands (`resolution.method_refusal`, the rule the
    form and `resolve` apply) and whether the lead had chosen it. None is chosen by default."""
    chosen = posted.get("method", "") if posted else ""
    return [
        {
            "value": method,
            "label": Resolution.Method(method).label,
            "meaning": RESOLUTION_METHOD_MEANINGS[method],
            "key": resolution.LEAD_METHOD_KEYS[method],
            "refusal": (refusal := resolution.method_refusal(method, item)),
            "checked": method == chosen and not refusal,
        }
        for method in resolution.LEAD_METHODS
    ]


def _initial(post: QueryDict | None, own: Annotation | None) -> dict[str, str | bool]:
    """The label form's values: what was just posted (on an error), else one's own label."""
    fields = ("issue_type", "theme", "sub_theme", "false_positive_reason", "summary", "note",
              "proposed_category")  # fmt: skip
    if post is not None:
        initial: dict[str, str | bool] = {f: post.get(f, "") for f in fields}
        initial["is_false_positive"] = bool(post.get("is_false_positive"))
        return initial
    if own is None:
        return {}
    own_initial: dict[str, str | bool] = {
        "issue_type": str(own.issue_type_id or ""),
        "theme": str(own.theme_id or ""),
        "sub_theme": str(own.sub_theme_id or ""),
        "false_positive_reason": own.false_positive_reason,
        "summary": own.summary,
        "note": own.note,
        "proposed_category": own.proposed_category,
    }
    own_initial["is_false_positive"] = own.is_false_positive
    return own_initial


def _based_on(final: Resolution | None) -> list[Annotation]:
    """The revisions a final label was decided on, for the lead's history."""
    if final is None or not final.based_on:
        return []
    return list(
        Annotation.objects.filter(pk__in=final.based_on)
        .select_related("annotator")
        .order_by("annotator__username")
    )
