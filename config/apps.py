from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SiteConfig(AppConfig):
    name = "config"
    verbose_name = _("Site")

    def ready(self) -> None:
        from config import checks  # noqa: F401  (registers system checks)
