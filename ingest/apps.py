from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class IngestConfig(AppConfig):
    name = "ingest"
    verbose_name = _("Forge ingest")

    def ready(self) -> None:
        from ingest import checks  # noqa: F401  (registers system checks)
        from ingest.hosts import token_origins

        # A FORGE_TOKEN_HOSTS entry that names no forge (the old `host` form) would leave it
        # unclear which token a host gets: every process (web, worker, command) refuses to
        # start, with ImproperlyConfigured naming the entry. System checks would not run under
        # gunicorn or Celery.
        token_origins()
