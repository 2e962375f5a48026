from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SiteConfig(AppConfig):
    name = "config"
    verbose_name = _("Site")

    def ready(self) -> None:
        from django.conf import settings

        from config import (
            checks,  # noqa: F401  (registers system checks)
            observability,
        )

        # A bad network in a metrics setting stops start-up, naming the setting.
        observability.parse_networks(settings.METRICS_ALLOWED_IPS, "METRICS_ALLOWED_IPS")
        observability.parse_networks(settings.METRICS_TRUSTED_PROXIES, "METRICS_TRUSTED_PROXIES")
        # Its Celery signals are connected by config.celery, imported only by a process that
        # publishes or runs a task (config/__init__).
