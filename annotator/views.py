"""Accepting an invite: a volunteer sets a password and joins a project with a role; and the
account's API token page.

The lead's side (creating invites and accounts) lives on the project page, in
`labeling.project_views`.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache

from annotator.accounts import (
    InviteUnusable,
    accept_invite,
    api_token_created,
    check_invite,
    create_api_token,
    revoke_api_token,
)
from annotator.forms import AcceptInviteForm, ApiTokenForm


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


# Where the new key waits, server side, for the one page that shows it (POST, redirect, GET).
_NEW_TOKEN = "new_api_token"


@login_required
@never_cache
def api_token(request):
    """The signed-in user's API token: create (or replace) it, see it once, revoke it.

    A POST answers with a redirect, as everywhere; the new key rides in the session to the next
    page of this view, which shows it and drops it, so it is shown once. Later visits show only
    when the token was made. The API reads it as `Authorization: Token <key>`.
    """
    if request.method == "POST":
        form = ApiTokenForm(request.POST)
        if not form.is_valid():
            return render(
                request,
                "annotator/api_token.html",
                {
                    "created": api_token_created(request.user),
                    "error": f"action: {form.errors['action'][0]}",
                },
                status=400,
            )
        if form.cleaned_data["action"] == "revoke":
            request.session.pop(_NEW_TOKEN, None)
            if revoke_api_token(request.user):
                messages.success(request, "Token revoked: it no longer opens the API.")
        else:
            request.session[_NEW_TOKEN] = create_api_token(request.user)
        return redirect("api_token_page")
    key = request.session.pop(_NEW_TOKEN, None)
    return render(
        request,
        "annotator/api_token.html",
        {"created": api_token_created(request.user), "key": key},
    )
