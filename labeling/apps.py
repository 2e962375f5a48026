from django.apps import AppConfig


class LabelingConfig(AppConfig):
    name = "labeling"
    verbose_name = "Labeling"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        # The modules that build PL/pgSQL functions register them on import; the registry
        # (pg_functions) imports none of them.
        from labeling import pg_functions, queue, submission  # noqa: F401

        post_migrate.connect(pg_functions.install, sender=self)
