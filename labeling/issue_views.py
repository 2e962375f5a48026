"""The issue list and the read-only issue page, for leads and researchers (issue 14).

Thin views: the project through `membership_or_404` with `ISSUE_LIST_ROLES` (an annotator, who
must stay blind to statuses and final labels, gets 404 like an outsider), the query string
through `IssueListForm`, the rows from `labeling.issue_list`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from csp.decorators import csp_update
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render

from annotator.models import LEAD_ROLES
from annotator.permissions import membership_or_404
from labeling import issue_list as issues
from labeling.forms import IssueListForm
from labeling.issue_context import issue_context
from labeling.permissions import ISSUE_LIST_ROLES
from lib import sql
from lib.requests import AuthedRequest

_View = TypeVar("_View", bound=Callable[..., Any])

# Issue images load only on a click (static/js/labeling.js), from anywhere: as on the labeling
# page, allowed on the issue page alone.
_issue_images: Callable[[_View], _View] = cast(Any, csp_update({"img-src": ["https:", "http:"]}))


@login_required
def issue_list(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=ISSUE_LIST_ROLES)
    project = membership.project
    form = IssueListForm(request.GET, project=project)
    page = None
    if form.is_valid():
        try:
            page = issues.issue_page(project, form.filters(), request.GET.get("page"))
        except issues.SearchTimedOut as timed_out:
            form.add_error("q", str(timed_out))
    # A bad filter, or a search out of time, shows its error and no rows: never an unfiltered
    # list taken for it.
    valid = page is not None
    context = {
        "project": project,
        "form": form,
        "values": form.values(),
        "page": page,
        "filter_query": form.query_string() if valid else "",
        "is_lead": membership.role in LEAD_ROLES,
        "searching": valid and bool(form.cleaned_data["q"]),
    }
    return render(request, "labeling/issue_list.html", context, status=200 if valid else 400)


@login_required
@_issue_images
def issue_detail(request: AuthedRequest, project_id: int, item_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=ISSUE_LIST_ROLES)
    project = membership.project
    item = issues.project_issue(project, item_id) if sql.is_row_id(item_id) else None
    if item is None:
        raise Http404
    is_lead = membership.role in LEAD_ROLES
    context = {
        "project": project,
        "item": item,
        "record": issues.issue_record(item, with_open_labels=is_lead),
        "is_lead": is_lead,
        **issue_context(item.issue),
    }
    return render(request, "labeling/issue_detail.html", context)
