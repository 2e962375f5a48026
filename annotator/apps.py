from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AnnotatorConfig(AppConfig):
    name = "annotator"
    verbose_name = _("Projects and members")

    def ready(self) -> None:
        from annotator import accounts, language

        accounts.connect_signals()  # username rules and API token revocation on every User save
        language.connect_signals()  # the saved interface language, remembered at login
        # The outbox's worker hooks are connected by annotator.tasks (a worker imports it at
        # start), so that no other process imports Celery at start-up.
