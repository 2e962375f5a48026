from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class InterviewsConfig(AppConfig):
    name = "interviews"
    verbose_name = _("Interviews")

    def ready(self) -> None:
        from annotator.links import ALL_ROLES, ANALYSE, ProjectLink, register

        # Every member reads the codebook; leads and researchers edit it (interviews.views).
        register(ProjectLink(_("Interviews"), "interviews", ALL_ROLES, 100, group=ANALYSE))
