from django.apps import AppConfig


class DatasetConfig(AppConfig):
    name = "dataset"
    verbose_name = "Dataset import, export and API"

    def ready(self) -> None:
        from annotator.links import ProjectLink, register
        from dataset.permissions import EXPORT_ROLES, RECALL_ROLES, RELEASE_ROLES, UPLOAD_ROLES

        register(
            ProjectLink("Exports", "exports", EXPORT_ROLES, 60),
            ProjectLink("Releases", "releases", RELEASE_ROLES, 70, element_id="releases-link"),
            ProjectLink("Filter recall", "filter_recall", RECALL_ROLES, 75),
            ProjectLink("Upload issues", "upload_issues", UPLOAD_ROLES, 78),
        )
