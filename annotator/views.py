"""Accepting an invite: a volunteer sets a password and joins a project with a role.

The lead's side (creating invites and accounts) lives on the project page, in
`labeling.project_views`.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render

from annotator.accounts import InviteUnusable, accept_invite, check_invite
from annotator.forms import AcceptInviteForm


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
        except ValidationError as exc:  # a look-alike was created since the form's check
            form.add_error("username", exc)
        else:
            login(request, membership.user, backend="annotator.auth.ModelBackend")
            messages.success(
                request, f"Welcome! You joined {membership.project} as {membership.role}."
            )
            return redirect("project_detail", project_id=membership.project_id)
    status = 400 if form.errors else 200
    return render(
        request,
        "registration/accept_invite.html",
        {"form": form, "invite": invitation},
        status=status,
    )
