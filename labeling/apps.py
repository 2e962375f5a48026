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

        from annotator.links import ProjectLink, register
        from annotator.models import LEAD_ROLES
        from labeling.guideline import GUIDELINE_ROLES
        from labeling.permissions import ISSUE_LIST_ROLES, LABELER_ROLES, VOTING_ROLES

        register(
            ProjectLink(
                "Label next issue", "label_next", LABELER_ROLES, 10, True, "start-labeling"
            ),
            ProjectLink("My progress", "my_progress", LABELER_ROLES, 20),
            ProjectLink("Guideline", "project_guideline", GUIDELINE_ROLES, 25),
            ProjectLink("Setup", "project_setup", LEAD_ROLES, 30),
            ProjectLink("Dashboard", "lead_dashboard", LEAD_ROLES, 35),
            ProjectLink("Disagreements", "disagreement_queue", LEAD_ROLES, 40),
            ProjectLink("Issues", "issue_list", ISSUE_LIST_ROLES, 45),
            ProjectLink("Taxonomy proposals", "taxonomy_proposals", VOTING_ROLES, 90),
        )
