"""The project pages: your projects with their progress, one project's overview, and the lead's
invites and accounts made from it (a refused form comes back on the page with its errors)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Count, Q
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotator.accounts import create_volunteer, rename_pseudonym
from annotator.forms import InviteForm, PseudonymForm, VolunteerForm, grantable_roles
from annotator.links import visible_links
from annotator.models import LEAD_ROLES, Invite, Membership, Project
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
    return _project_page(request, membership)


def _project_page(
    request,
    membership,
    *,
    invite_form: InviteForm | None = None,
    volunteer_form: VolunteerForm | None = None,
    pseudonym_form: tuple[int, PseudonymForm] | None = None,
    status: int = 200,
):
    """The project page; a lead's refused invite or account form comes back with its errors."""
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
        "project_links": visible_links(membership),
    }
    if is_lead:
        # A refused rename comes back beside its member, with what the lead typed.
        refused = dict([pseudonym_form]) if pseudonym_form else {}
        context["members"] = [
            (member, refused.get(member.pk))
            for member in project.memberships.select_related("user")
        ]
        context["invites"] = project.invites.filter(used_at__isnull=True)[:20]
        roles = grantable_roles(membership.role, request.user.is_superuser)
        context["invite_form"] = invite_form or InviteForm(roles=roles, auto_id="invite_%s")
        context["volunteer_form"] = volunteer_form or VolunteerForm(
            roles=roles, auto_id="volunteer_%s"
        )
    return render(request, "annotator/project_detail.html", context, status=status)


@login_required
@require_POST
def create_invite(request, project_id: int):
    membership = membership_or_404(request.user, project_id, roles=LEAD_ROLES)
    form = InviteForm(
        request.POST,
        roles=grantable_roles(membership.role, request.user.is_superuser),
        auto_id="invite_%s",
    )
    if not form.is_valid():
        return _project_page(request, membership, invite_form=form, status=400)
    _, token = Invite.issue_for(
        membership.project,
        form.cleaned_data["role"],
        request.user,
        email=form.cleaned_data["email"],
        days=form.cleaned_data["days"],
    )
    link = request.build_absolute_uri(reverse("accept_invite", args=[token]))
    # The link is shown once; only its hash is stored.
    messages.success(request, f"Invite link (shown once, single use): {link}")
    return redirect("project_detail", project_id=project_id)


@login_required
@require_POST
def add_volunteer(request, project_id: int):
    membership = membership_or_404(request.user, project_id, roles=LEAD_ROLES)
    form = VolunteerForm(
        request.POST,
        roles=grantable_roles(membership.role, request.user.is_superuser),
        auto_id="volunteer_%s",
    )
    if form.is_valid():
        data = form.cleaned_data
        try:
            create_volunteer(
                membership.project, data["username"], data["password"], data["role"], data["email"]
            )
        except ValidationError as exc:  # a look-alike was created since the form's check
            form.add_error("username", exc)
        else:
            messages.success(request, f"Account {data['username']} created as {data['role']}.")
            return redirect("project_detail", project_id=project_id)
    # Errors are shown beside their fields, in the form as the lead filled it.
    return _project_page(request, membership, volunteer_form=form, status=400)


@login_required
@require_POST
def rename_member(request, project_id: int, member_id: int):
    """A lead changes a member's pseudonym (how exports and agreement figures name them)."""
    membership = membership_or_404(request.user, project_id, roles=LEAD_ROLES)
    member = get_object_or_404(Membership, pk=member_id, project=membership.project)
    form = PseudonymForm(request.POST, membership=member, prefix=f"member-{member.pk}")
    if form.is_valid():
        try:
            rename_pseudonym(member, form.cleaned_data["pseudonym"])
        except ValidationError as exc:
            form.add_error("pseudonym", exc)
        else:
            messages.success(request, f"{member.user.username} is now {member.pseudonym}.")
            return redirect("project_detail", project_id=project_id)
    return _project_page(request, membership, pseudonym_form=(member.pk, form), status=400)
