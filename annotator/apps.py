from django.apps import AppConfig


class AnnotatorConfig(AppConfig):
    name = "annotator"
    verbose_name = "Labeling"

    def ready(self) -> None:
        from annotator import checks  # noqa: F401  (registers system checks)
