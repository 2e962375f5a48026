"""System checks of the machine raters' settings: a bad MODEL_API_HOSTS entry fails loudly at
start, as a bad FORGE_API_HOSTS entry does (`ingest.checks`)."""

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.core.checks import Error, register
from django.core.exceptions import ImproperlyConfigured

from ingest.hosts import MODEL_API_HOSTS, allowed_hosts


@register()
def check_model_api_hosts(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[Error]:
    try:
        allowed_hosts(MODEL_API_HOSTS)
    except ImproperlyConfigured as exc:
        return [
            Error(
                str(exc),
                hint="Comma-separated entries: host, host:port, https://host or http://host.",
                id="raters.E001",
            )
        ]
    return []
