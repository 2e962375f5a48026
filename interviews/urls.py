from django.urls import include, path

from interviews import views

urlpatterns = [
    path("projects/<int:project_id>/interviews/", views.interviews, name="interviews"),
    path(
        "projects/<int:project_id>/interviews/codebook.csv",
        views.codebook_export,
        name="codebook_export",
    ),
    path(
        "projects/<int:project_id>/interviews/rankings.csv",
        views.rankings_export,
        name="rankings_export",
    ),
    # The project-scoped taxonomy pages; annotator/urls.py mounts taxonomy.urls under
    # "taxonomy/", so they ride on this root-level include until it includes them itself.
    path("", include("taxonomy.project_urls")),
]
