"""System checks for settings that must hold outside development."""

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register


@register(Tags.security, deploy=True)
def check_production_settings(
    app_configs: Sequence[AppConfig] | None, **kwargs: Any
) -> list[CheckMessage]:
    problems: list[CheckMessage] = []
    if settings.DEBUG:
        problems.append(
            Error("DEBUG is on.", hint="Unset DEBUG in production.", id="annotator.E001")
        )
    if not settings.ALLOWED_HOSTS:
        problems.append(
            Error("ALLOWED_HOSTS is empty.", hint="Set ALLOWED_HOSTS.", id="annotator.E002")
        )
    if settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        problems.append(
            Warning(
                "The embedded SQLite database is for a first look only.",
                hint="Set DATABASE_URL to a PostgreSQL database.",
                id="annotator.W001",
            )
        )
    return problems


@register(Tags.security)
def check_some_sign_in(
    app_configs: Sequence[AppConfig] | None, **kwargs: Any
) -> list[CheckMessage]:
    """With LOCAL_PASSWORDS off, members sign in only through a provider: say so if none is
    configured (staff still can, on the admin's login page)."""
    if settings.LOCAL_PASSWORDS or settings.SOCIALACCOUNT_PROVIDERS:
        return []
    return [
        Warning(
            "LOCAL_PASSWORDS is off and no identity provider is configured: only staff can "
            "sign in (on /admin/login/).",
            hint="Set OIDC_PROVIDERS, OIDC_SERVER_URL or GITHUB_CLIENT_ID, or LOCAL_PASSWORDS=1.",
            id="annotator.W002",
        )
    ]
