from django.apps import AppConfig


class IngestConfig(AppConfig):
    name = "ingest"
    verbose_name = "Ingest"

    def ready(self) -> None:
        from ingest import checks  # noqa: F401  (registers system checks)
