from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RatersConfig(AppConfig):
    name = "raters"
    verbose_name = _("Machine raters")

    def ready(self) -> None:
        from annotator.links import ANALYSE, ProjectLink, register
        from raters import checks, signals  # noqa: F401  (checks: registered on import)
        from raters.permissions import VALIDATION_ROLES

        register(
            ProjectLink(_("Machine raters"), "raters_page", VALIDATION_ROLES, 57, group=ANALYSE)
        )
        register(
            ProjectLink(
                _("Estimates with machine help"),
                "estimates_page",
                VALIDATION_ROLES,
                58,
                group=ANALYSE,
            )
        )
        signals.connect()
