from django.apps import AppConfig


class AnnotatorConfig(AppConfig):
    name = "annotator"
    verbose_name = "Labeling"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from annotator import (
            accounts,
            checks,  # noqa: F401  (registers system checks)
            pg_functions,
        )

        post_migrate.connect(pg_functions.install, sender=self)
        accounts.connect_signals()  # username rules and API token revocation on every User save
