"""Invites and accounts a lead makes for a project."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotator.accounts import InviteUnusable, accept_invite, check_invite, create_volunteer
from annotator.forms import AcceptInviteForm, InviteForm, VolunteerForm, grantable_roles
from annotator.models import LEAD_ROLES, Invite
from annotator.permissions import membership_or_404


@login_required
@require_POST
def create_invite(request, project_id: int):
    membership = membership_or_404(request.user, project_id, roles=LEAD_ROLES)
    form = InviteForm(
        request.POST, roles=grantable_roles(membership.role, request.user.is_superuser)
    )
    if not form.is_valid():
        messages.error(request, f"Invite not created: {form.errors.as_text()}")
        return redirect("project_detail", project_id=project_id)
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
        request.POST, roles=grantable_roles(membership.role, request.user.is_superuser)
    )
    if form.is_valid():
        data = form.cleaned_data
        create_volunteer(
            membership.project, data["username"], data["password"], data["role"], data["email"]
        )
        messages.success(request, f"Account {data['username']} created as {data['role']}.")
    else:
        messages.error(request, f"Account not created: {form.errors.as_text()}")
    return redirect("project_detail", project_id=project_id)


def invite(request, token: str):
    try:
        invitation = check_invite(token)
    except InviteUnusable as exc:
        return render(
            request, "registration/invite_unusable.html", {"reason": str(exc)}, status=410
        )
    form = AcceptInviteForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            membership = accept_invite(
                token, form.cleaned_data["username"], form.cleaned_data["password"]
            )
        except InviteUnusable as exc:
            return render(
                request, "registration/invite_unusable.html", {"reason": str(exc)}, status=410
            )
        login(request, membership.user, backend="annotator.auth.ModelBackend")
        messages.success(request, f"Welcome! You joined {membership.project} as {membership.role}.")
        return redirect("project_detail", project_id=membership.project_id)
    return render(request, "registration/accept_invite.html", {"form": form, "invite": invitation})
