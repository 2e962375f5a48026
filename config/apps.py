from django.apps import AppConfig


class SiteConfig(AppConfig):
    name = "config"
    verbose_name = "Site"

    def ready(self) -> None:
        from config import checks  # noqa: F401  (registers system checks)
