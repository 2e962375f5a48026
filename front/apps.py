from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class FrontConfig(AppConfig):
    """Pages that span apps: home, a project's page, creating one, its members and invites, and
    the taxonomy pages. They call the apps below (no models of their own); nothing imports
    them but the root URL conf."""

    name = "front"
    verbose_name = _("Project pages")

    def ready(self) -> None:
        from annotator.links import LABEL, ProjectLink, register
        from labeling.permissions import VOTING_ROLES

        register(
            # Lazy: the label is made once, at start, and shown in each request's language.
            ProjectLink(
                _("Taxonomy proposals"), "taxonomy_proposals", VOTING_ROLES, 90, group=LABEL
            ),
        )
