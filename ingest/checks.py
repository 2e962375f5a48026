"""System checks of the ingest's settings: a bad FORGE_API_HOSTS entry fails loudly at start."""

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.core.checks import Error, register
from django.core.exceptions import ImproperlyConfigured

from ingest.hosts import allowed_hosts


@register()
def check_forge_api_hosts(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[Error]:
    try:
        allowed_hosts()
    except ImproperlyConfigured as exc:
        return [
            Error(
                str(exc),
                hint="Comma-separated entries: host, host:port, https://host or http://host.",
                id="ingest.E001",
            )
        ]
    return []
