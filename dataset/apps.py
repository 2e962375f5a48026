from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DatasetConfig(AppConfig):
    name = "dataset"
    verbose_name = _("Dataset import, export and API")

    def ready(self) -> None:
        from annotator.links import ANALYSE, PUBLISH, SET_UP, ProjectLink, register
        from dataset import signals
        from dataset.permissions import EXPORT_ROLES, RECALL_ROLES, RELEASE_ROLES, UPLOAD_ROLES

        register(
            ProjectLink(_("Exports"), "exports", EXPORT_ROLES, 60, group=PUBLISH),
            ProjectLink(
                _("Releases"),
                "releases",
                RELEASE_ROLES,
                70,
                element_id="releases-link",
                group=PUBLISH,
            ),
            ProjectLink(_("Filter recall"), "filter_recall", RECALL_ROLES, 75, group=ANALYSE),
            ProjectLink(_("Upload issues"), "upload_issues", UPLOAD_ROLES, 78, group=SET_UP),
        )
        signals.connect()
