"""The project pages: your projects with their progress, and one project's overview."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.shortcuts import render

from annotator.forms import InviteForm, VolunteerForm, grantable_roles
from annotator.models import LEAD_ROLES, Project
from annotator.permissions import membership_or_404
from labeling.models import ProjectIssue


def _project_counts(project_ids):
    rows = (
        ProjectIssue.objects.filter(project_id__in=project_ids)
        .values("project_id")
        .annotate(
            total=Count("id"),
            final=Count("id", filter=Q(status="final")),
            disagreements=Count("id", filter=Q(status="disagreement")),
        )
    )
    return {row["project_id"]: row for row in rows}


@login_required
def home(request):
    memberships = list(request.user.memberships.select_related("project"))
    if request.user.is_superuser:
        member_of = {m.project_id for m in memberships}
        memberships += [
            type("M", (), {"project": p, "role": "admin", "project_id": p.pk})
            for p in Project.objects.exclude(pk__in=member_of)
        ]
    counts = _project_counts([m.project_id for m in memberships])
    rows = []
    for m in memberships:
        c = counts.get(m.project_id, {"total": 0, "final": 0, "disagreements": 0})
        percent = round(100 * c["final"] / c["total"]) if c["total"] else 0
        row = {"project": m.project, "role": m.role, "percent": percent, **c}
        # Blindness: how many issues are disputed is for leads only.
        row["is_lead"] = m.role in LEAD_ROLES
        rows.append(row)
    return render(request, "annotator/home.html", {"rows": rows})


@login_required
def project_detail(request, project_id: int):
    membership = membership_or_404(request.user, project_id)
    project = membership.project
    is_lead = membership.role in LEAD_ROLES
    counts = _project_counts([project.pk]).get(
        project.pk, {"total": 0, "final": 0, "disagreements": 0}
    )
    context = {
        "project": project,
        "membership": membership,
        "is_lead": is_lead,
        "counts": counts,
        "percent": round(100 * counts["final"] / counts["total"]) if counts["total"] else 0,
    }
    if is_lead:
        context["members"] = project.memberships.select_related("user")
        context["invites"] = project.invites.filter(used_at__isnull=True)[:20]
        roles = grantable_roles(membership.role, request.user.is_superuser)
        context["invite_form"] = InviteForm(roles=roles)
        context["volunteer_form"] = VolunteerForm(roles=roles)
    return render(request, "annotator/project_detail.html", context)
