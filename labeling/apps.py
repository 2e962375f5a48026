from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class LabelingConfig(AppConfig):
    name = "labeling"
    verbose_name = _("Labeling")

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        # The modules that build PL/pgSQL functions register them on import; the registry
        # (pg_functions) imports none of them.
        from labeling import pg_functions, queue, submission  # noqa: F401

        post_migrate.connect(pg_functions.install, sender=self)

        # The queue's depth per project, read at each scrape of /metrics.
        from labeling.monitoring import QUEUE_DEPTH
        from lib.metrics import register_gauge

        register_gauge(QUEUE_DEPTH)

        from annotator.links import LABEL, RESOLVE, SET_UP, ProjectLink, register
        from annotator.models import LEAD_ROLES
        from labeling.guideline import GUIDELINE_ROLES
        from labeling.permissions import ISSUE_LIST_ROLES, LABELER_ROLES

        register(
            # Lazy: the labels are made once, at start, and shown in each request's language.
            ProjectLink(
                _("Label next issue"),
                "label_next",
                LABELER_ROLES,
                10,
                True,
                "start-labeling",
                group=LABEL,
            ),
            ProjectLink(_("My progress"), "my_progress", LABELER_ROLES, 20, group=LABEL),
            ProjectLink(_("Guideline"), "project_guideline", GUIDELINE_ROLES, 25, group=LABEL),
            ProjectLink(_("Setup"), "project_setup", LEAD_ROLES, 30, group=SET_UP),
            ProjectLink(_("Dashboard"), "lead_dashboard", LEAD_ROLES, 35, group=RESOLVE),
            ProjectLink(_("Disagreements"), "disagreement_queue", LEAD_ROLES, 40, group=RESOLVE),
            ProjectLink(_("Issues"), "issue_list", ISSUE_LIST_ROLES, 45, group=RESOLVE),
        )
