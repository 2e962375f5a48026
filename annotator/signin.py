"""Sign-in through an identity provider (OpenID Connect, GitHub) with django-allauth.

The providers come from the environment (`config.signin`); nothing configured, no buttons.
allauth runs the protocol (state, PKCE, the token exchange, the id_token's signature, issuer and
audience); these adapters hold our rules, so an account made through a provider is made like
any other:

* **Who may get an account.** A provider sign-in that matches no linked account makes one only
  while accepting an invite (the invite page's buttons, `start_invite_sign_in`, carry the
  invite's token through the provider's round trip in allauth's state). Without an invite it is
  refused with a page that says so: a GitHub account is not an invitation to the study.
  Accounts are never linked by e-mail address (``SOCIALACCOUNT_EMAIL_AUTHENTICATION`` off).
* **The username rule.** The provider's login (GitHub) or ``preferred_username`` (OpenID
  Connect) must pass `annotator.accounts.check_new_username`; a look-alike of an existing
  account, or a name the rule refuses, gets a page naming the name and the reason. Never a
  silent suffix, never a merge with the existing account.
* **The invite** is consumed and the membership made (`accounts.join_by_invite`, the pseudonym
  from `Membership.save`) in the transaction that creates the account; an invite used meanwhile
  leaves no account behind.
* **Local passwords** (`LOCAL_PASSWORDS`, `annotator.auth.passwords_allowed`): off, the login
  and invite pages show no password form and refuse one posted, and the login backend refuses
  passwords of everyone but staff, who keep the admin's login page.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlsplit

import requests
from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.utils import user_username
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from allauth.socialaccount.adapter import get_adapter as get_social_adapter
from allauth.socialaccount.models import SocialApp, SocialLogin
from allauth.socialaccount.providers.base import AuthProcess, Provider
from django.contrib import messages
from django.contrib.auth.models import AbstractBaseUser, User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.forms import Form
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext

from annotator.accounts import (
    InviteUnusable,
    check_invite,
    check_new_username,
    join_by_invite,
    welcome_message,
)
from annotator.models import Membership

logger = logging.getLogger(__name__)

# The login backend every session of ours names (allauth would otherwise pick the first
# backend with get_user, django-axes' standalone one, which finds no one).
LOGIN_BACKEND = "annotator.auth.ModelBackend"


def provider_view(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A provider's allauth view, where allauth would answer 500: a 404 where the provider is
    not configured (GitHub's routes without a GitHub app), a 502 page where the provider does
    not answer (its discovery document, before the redirect)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except SocialApp.DoesNotExist:
            raise Http404(gettext("This identity provider is not configured.")) from None
        except requests.RequestException:
            return _unreachable(request)

    return wrapper


def _unreachable(request: HttpRequest) -> HttpResponse:
    logger.warning("identity provider unreachable at %s", request.path)
    return render(request, "socialaccount/authentication_error.html", status=502)


def providers(request: HttpRequest) -> list[Provider]:
    """The configured providers, for the login and invite pages' buttons (never a secret)."""
    return get_social_adapter(request).list_providers(request)


def allow_provider_forms(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """Let the page's provider buttons leave the site: the CSP's ``form-action 'self'`` also
    covers where a form's POST is redirected (Chromium blocks the sign-in otherwise), so the
    login and invite pages, and only they, add the providers' origins (an OpenID Connect
    provider's authorization endpoint is taken to be on its issuer's origin)."""
    origins = sorted({_origin(request, provider) for provider in providers(request)})
    if origins:
        response._csp_update = {"form-action": origins}  # type: ignore[attr-defined]
    return response


def _origin(request: HttpRequest, provider: Provider) -> str:
    server_url = getattr(provider, "server_url", None)  # OpenID Connect's, without a request
    if server_url is None:
        server_url = provider.get_oauth2_adapter(request).authorize_url
    parts = urlsplit(server_url)
    return f"{parts.scheme}://{parts.netloc}"


def start_invite_sign_in(request: HttpRequest, token: str, provider_id: str) -> HttpResponse:
    """Send the visitor to `provider_id` to accept the invite `token` (checked by the caller);
    the token rides in allauth's state (kept in the session), so it comes back only with this
    sign-in."""
    provider = get_social_adapter(request).get_provider(request, provider_id)
    try:
        return provider.redirect(
            request, AuthProcess.LOGIN, next_url=reverse("home"), data={"invite": token}
        )
    except requests.RequestException:
        return _unreachable(request)


def _refusal(request: HttpRequest, reason: str, status: int, username: str = "") -> HttpResponse:
    return render(
        request,
        "registration/signin_refused.html",
        {"reason": reason, "username": username},
        status=status,
    )


def _invite_token(sociallogin: SocialLogin) -> str | None:
    data = sociallogin.state.get("data")
    token = data.get("invite") if isinstance(data, dict) else None
    return token if isinstance(token, str) else None


def _welcome(request: HttpRequest, membership: Membership) -> None:
    messages.success(request, welcome_message(membership))


class AccountAdapter(DefaultAccountAdapter):
    """allauth's account side: no sign-up of its own, our username rule, our login backend."""

    def is_open_for_signup(self, request: HttpRequest) -> bool:
        return False  # accounts come from a lead, an invite, or an invite through a provider

    def clean_username(self, username: str, shallow: bool = False) -> str:
        return check_new_username(username)

    def login(self, request: HttpRequest, user: AbstractBaseUser) -> None:
        user.backend = LOGIN_BACKEND
        super().login(request, user)


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    """Provider sign-ins: a linked account signs in; a new one needs an invite and a username
    that passes our rule (module docstring)."""

    def pre_social_login(self, request: HttpRequest, sociallogin: SocialLogin) -> None:
        token = _invite_token(sociallogin)
        if sociallogin.is_existing:
            if token is not None:  # an existing account accepting another project's invite
                _welcome(request, self._join(request, token, sociallogin.user))
            return
        if token is None:
            raise ImmediateHttpResponse(
                _refusal(
                    request,
                    gettext(
                        "No account here is linked to this sign-in. Ask a project lead for an "
                        "invite link, and sign in from it."
                    ),
                    403,
                )
            )
        username = user_username(sociallogin.user) or ""
        try:
            check_invite(token)
            check_new_username(username)
        except InviteUnusable as exc:
            raise ImmediateHttpResponse(self._unusable(request, exc)) from None
        except ValidationError as exc:
            raise ImmediateHttpResponse(self._bad_username(request, username, exc)) from None

    def is_open_for_signup(self, request: HttpRequest, sociallogin: SocialLogin) -> bool:
        return _invite_token(sociallogin) is not None  # pre_social_login checked it

    def is_auto_signup_allowed(self, request: HttpRequest, sociallogin: SocialLogin) -> bool:
        return True  # never allauth's sign-up form: the username is the provider's, or refused

    def save_user(
        self, request: HttpRequest, sociallogin: SocialLogin, form: Form | None = None
    ) -> Any:
        token = _invite_token(sociallogin)
        assert token is not None  # is_open_for_signup
        username = user_username(sociallogin.user) or ""
        try:
            with transaction.atomic():
                user = super().save_user(request, sociallogin, form)
                membership = self._join(request, token, user)
        except ValidationError as exc:  # a look-alike was created since pre_social_login
            raise ImmediateHttpResponse(self._bad_username(request, username, exc)) from None
        _welcome(request, membership)
        return user

    def populate_user(self, request: HttpRequest, sociallogin: SocialLogin, data: Any) -> Any:
        # The provider's username as it is: allauth would make one up (or add a suffix) where it
        # is missing or taken; our rule refuses instead.
        user = super().populate_user(request, sociallogin, data)
        user.username = (data.get("username") or "").strip()
        return user

    def _join(self, request: HttpRequest, token: str, user: User) -> Membership:
        try:
            return join_by_invite(token, user)
        except InviteUnusable as exc:
            raise ImmediateHttpResponse(self._unusable(request, exc)) from None

    @staticmethod
    def _unusable(request: HttpRequest, exc: InviteUnusable) -> HttpResponse:
        return render(
            request, "registration/invite_unusable.html", {"reason": str(exc)}, status=410
        )

    @staticmethod
    def _bad_username(request: HttpRequest, username: str, exc: ValidationError) -> HttpResponse:
        reason = " ".join(exc.messages)
        if not username:
            reason = gettext(
                "Your identity provider gave no username (OpenID Connect preferred_username)."
            )
        return _refusal(request, reason, 400, username)
