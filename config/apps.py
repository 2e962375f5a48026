from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop

# Django's form label suffix (`Form.label_suffix`, `_(":")`): Django's zh_Hans catalogue keeps
# the ASCII colon after a Chinese label; marked here so that ours, which wins, holds the
# full-width colon.
gettext_noop(":")


class SiteConfig(AppConfig):
    name = "config"
    verbose_name = _("Site")

    def ready(self) -> None:
        from config import checks  # noqa: F401  (registers system checks)
