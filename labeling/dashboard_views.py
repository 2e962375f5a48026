"""The lead's dashboard page (`labeling.dashboard` computes it): the whole page, or its figures
alone when htmx asks for them (the page polls every `REFRESH_SECONDS`)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render

from annotator.models import LEAD_ROLES
from annotator.permissions import membership_or_404
from labeling import dashboard
from lib.requests import AuthedRequest


@login_required
def lead_dashboard(request: AuthedRequest, project_id: int) -> HttpResponse:
    membership = membership_or_404(request.user, project_id, roles=LEAD_ROLES)
    # "Refresh now" asks for figures newer than a poll's (labeling.dashboard.ASKED_SECONDS).
    board = dashboard.dashboard(membership.project, asked=request.GET.get("refresh") == "1")
    template = "labeling/_dashboard_figures.html" if request.htmx else "labeling/dashboard.html"
    return render(request, template, {"project": membership.project, "board": board})
