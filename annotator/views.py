"""Accepting an invite: a volunteer sets a password, or signs in through an identity provider,
and joins a project with a role; the login page; the account's API token page; the language
switcher.

The lead's side (creating invites and accounts) lives on the project page, in
`front.project_views`.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from annotator.accounts import (
    InviteUnusable,
    accept_invite,
    api_token_created,
    check_invite,
    create_api_token,
    revoke_api_token,
    welcome_message,
)
from annotator.auth import passwords_allowed
from annotator.forms import AcceptInviteForm, ApiTokenForm, ProviderForm
from annotator.language import LANGUAGE_CODES, save_language, supported
from annotator.signin import (
    LOGIN_BACKEND,
    allow_provider_forms,
    providers,
    start_invite_sign_in,
)
from lib.requests import AuthedRequest

PASSWORDS_OFF = _("Passwords are turned off on this site: sign in through your identity provider.")


class LoginView(auth_views.LoginView):
    """Django's login page, with the identity providers' buttons; with `LOCAL_PASSWORDS` off,
    no password form, and one posted anyway is refused (staff use the admin's login page)."""

    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["providers"] = providers(self.request)
        context["passwords"] = passwords_allowed()
        return context

    def render_to_response(self, context: dict[str, Any], **response_kwargs: Any) -> HttpResponse:
        return allow_provider_forms(
            self.request, super().render_to_response(context, **response_kwargs)
        )

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not passwords_allowed():
            context = self.get_context_data(passwords_refused=PASSWORDS_OFF)
            return self.render_to_response(context, status=400)
        return super().post(request, *args, **kwargs)


def _unusable(request: HttpRequest, exc: InviteUnusable) -> HttpResponse:
    return render(request, "registration/invite_unusable.html", {"reason": str(exc)}, status=410)


def invite(request: HttpRequest, token: str) -> HttpResponse:
    try:
        invitation = check_invite(token)
    except InviteUnusable as exc:
        return _unusable(request, exc)
    form = AcceptInviteForm(request.POST or None)
    context = {
        "form": form,
        "invite": invitation,
        "token": token,
        "providers": providers(request),
        "passwords": passwords_allowed(),
    }
    if request.method == "POST" and not passwords_allowed():
        context["passwords_refused"] = PASSWORDS_OFF
        return _invite_page(request, context, status=400)
    if request.method == "POST" and form.is_valid():
        try:
            membership = accept_invite(
                token, form.cleaned_data["username"], form.cleaned_data["password"]
            )
        except InviteUnusable as exc:
            return _unusable(request, exc)
        except ValidationError as exc:  # a look-alike was created since the form's check
            form.add_error("username", exc)
        else:
            login(request, membership.user, backend=LOGIN_BACKEND)
            messages.success(request, welcome_message(membership))
            return redirect("project_detail", project_id=membership.project_id)
    return _invite_page(request, context, status=400 if form.errors else 200)


def _invite_page(request: HttpRequest, context: dict, status: int) -> HttpResponse:
    response = render(request, "registration/accept_invite.html", context, status=status)
    return allow_provider_forms(request, response)


@require_POST
def invite_sign_in(request: HttpRequest, token: str) -> HttpResponse:
    """Accept the invite by signing in through an identity provider (`annotator.signin`)."""
    try:
        check_invite(token)
    except InviteUnusable as exc:
        return _unusable(request, exc)
    form = ProviderForm(request.POST, providers=providers(request))
    if not form.is_valid():
        return HttpResponse(
            gettext("provider: %(error)s") % {"error": form.errors["provider"][0]}, status=400
        )
    return start_invite_sign_in(request, token, form.cleaned_data["provider"])


# The new key's one trip from the POST that made it to the page that shows it: a signed cookie
# for that page only, deleted by it. Never on the server (the session is stored): only the
# key's digest is (`annotator.tokens`).
_NEW_TOKEN_COOKIE = "new_api_token"
_NEW_TOKEN_SALT = "annotator.api_token"
_NEW_TOKEN_SECONDS = 120


@login_required
@never_cache
def api_token(request: AuthedRequest) -> HttpResponse:
    """The signed-in user's API token: create (or replace) it, see it once, revoke it.

    A POST answers with a redirect, as everywhere; the new key rides to the next page of this
    view in a short-lived cookie of that page (signed, HttpOnly, SameSite=Strict), which the
    page shows and deletes: the server keeps no copy, not even in the session. Later visits
    show only when the token was made. The API reads it as `Authorization: Token <key>`.
    """
    page = reverse("api_token_page")
    if request.method == "POST":
        form = ApiTokenForm(request.POST)
        if not form.is_valid():
            return render(
                request,
                "annotator/api_token.html",
                {
                    "created": api_token_created(request.user),
                    "error": gettext("action: %(error)s") % {"error": form.errors["action"][0]},
                },
                status=400,
            )
        response = redirect(page)
        if form.cleaned_data["action"] == "revoke":
            if revoke_api_token(request.user):
                messages.success(request, gettext("Token revoked: it no longer opens the API."))
            response.delete_cookie(_NEW_TOKEN_COOKIE, path=page)
            return response
        key, _created = create_api_token(request.user)
        response.set_signed_cookie(
            _NEW_TOKEN_COOKIE,
            f"{request.user.pk}:{key}",
            salt=_NEW_TOKEN_SALT,
            max_age=_NEW_TOKEN_SECONDS,
            path=page,
            secure=settings.SESSION_COOKIE_SECURE,
            httponly=True,
            samesite="Strict",
        )
        return response
    carried = request.get_signed_cookie(
        _NEW_TOKEN_COOKIE, default=None, salt=_NEW_TOKEN_SALT, max_age=_NEW_TOKEN_SECONDS
    )
    owner, _, key = (carried or "").partition(":")
    page_response = render(
        request,
        "annotator/api_token.html",
        {
            "created": api_token_created(request.user),
            # Another account's key (signed in as someone else since) is not shown.
            "key": key if owner == str(request.user.pk) else None,
        },
    )
    if carried is not None or _NEW_TOKEN_COOKIE in request.COOKIES:
        page_response.delete_cookie(_NEW_TOKEN_COOKIE, path=page, samesite="Strict")
    return page_response


@require_POST
def set_language(request: HttpRequest) -> HttpResponse:
    """The language switcher (every page's header, the login page's too): keep the choice in
    Django's language cookie and, for a signed-in person, as their saved preference
    (`annotator.language`), then go back to `next` if it is a page of this site (else home).

    A code that is not one of `settings.LANGUAGES` is a 400 and changes nothing.
    """
    code = supported(request.POST.get("language"))
    if code is None:
        message = gettext("language: choose one of %(codes)s") % {
            "codes": ", ".join(sorted(LANGUAGE_CODES))
        }
        return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")
    next_url = request.POST.get("next") or ""
    if not url_has_allowed_host_and_scheme(
        next_url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        next_url = reverse("home")  # never to another site (an open redirect)
    if request.user.is_authenticated:
        save_language(request, code)
    translation.activate(code)
    response = HttpResponseRedirect(next_url)
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME,
        code,
        max_age=settings.LANGUAGE_COOKIE_AGE,
        path=settings.LANGUAGE_COOKIE_PATH,
        domain=settings.LANGUAGE_COOKIE_DOMAIN,
        secure=settings.LANGUAGE_COOKIE_SECURE,
        httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
        samesite=settings.LANGUAGE_COOKIE_SAMESITE,  # type: ignore[arg-type]  # "Lax"
    )
    return response
