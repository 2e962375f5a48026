from django.apps import AppConfig


class InterviewsConfig(AppConfig):
    name = "interviews"
    verbose_name = "Interviews"

    def ready(self) -> None:
        from annotator.links import ALL_ROLES, ProjectLink, register

        # Every member reads the codebook; leads and researchers edit it (interviews.views).
        register(ProjectLink("Interviews", "interviews", ALL_ROLES, 100))
