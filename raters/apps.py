from django.apps import AppConfig


class RatersConfig(AppConfig):
    name = "raters"
    verbose_name = "Machine raters"

    def ready(self) -> None:
        from annotator.links import ProjectLink, register
        from raters import checks, signals  # noqa: F401  (checks: registered on import)
        from raters.permissions import VALIDATION_ROLES

        register(ProjectLink("Machine raters", "raters_page", VALIDATION_ROLES, 57))
        signals.connect()
