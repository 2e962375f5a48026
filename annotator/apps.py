from django.apps import AppConfig


class AnnotatorConfig(AppConfig):
    name = "annotator"
    verbose_name = "Projects and members"

    def ready(self) -> None:
        from annotator import accounts

        accounts.connect_signals()  # username rules and API token revocation on every User save
