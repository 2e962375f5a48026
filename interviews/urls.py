from django.urls import path

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
]
