"""The interface's language for each person: a saved choice first, then the browser's.

Django's `LocaleMiddleware` (before authentication) picks the language from the language cookie
or the browser's Accept-Language. `UserLanguageMiddleware`, after authentication, replaces it
with the signed-in person's saved `Preference.language` when they have one, so the choice
follows them to another browser or a new session.

The saved choice rides in the session (`SESSION_KEY`), put there at login and when it is
changed, so a page costs no extra query: only a session from before this existed looks it up
once. A change made in another session is seen at the next login.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.auth.signals import user_logged_in
from django.http import HttpRequest, HttpResponse
from django.utils import translation

from annotator.models import Preference

SESSION_KEY = "annotator_language"
LANGUAGE_CODES = frozenset(code for code, _ in settings.LANGUAGES)


def supported(code: object) -> str | None:
    """The language code as `settings.LANGUAGES` spells it, or None for any other value."""
    if not isinstance(code, str):
        return None
    code = code.strip().lower()
    return code if code in LANGUAGE_CODES else None


def saved_language(user: User) -> str:
    """The user's saved language code, or "" (no choice: the browser decides)."""
    found = Preference.objects.filter(user=user).values_list("language", flat=True).first()
    return supported(found) or ""


def save_language(request: HttpRequest, code: str) -> None:
    """Keep `code` as the signed-in user's language (the caller checked it is supported)."""
    user_id = request.user.pk
    assert user_id is not None, "a visitor's choice is kept in the cookie only"
    Preference.objects.update_or_create(user_id=user_id, defaults={"language": code})
    request.session[SESSION_KEY] = code


def _remember_at_login(
    sender: type[User], request: HttpRequest | None, user: User, **kwargs: Any
) -> None:
    if request is not None and hasattr(request, "session"):
        request.session[SESSION_KEY] = saved_language(user)


def connect_signals() -> None:
    """Called once from AnnotatorConfig.ready."""
    user_logged_in.connect(_remember_at_login, dispatch_uid="annotator.language.login")


class UserLanguageMiddleware:
    """Activate the signed-in person's saved language (after AuthenticationMiddleware)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            code = request.session.get(SESSION_KEY)
            if code is None:  # a session from before the preference existed
                code = request.session[SESSION_KEY] = saved_language(user)
            code = supported(code)
            if code:
                translation.activate(code)
                request.LANGUAGE_CODE = code
        return self.get_response(request)
