from django.urls import path

from raters import api, estimate_views, views

urlpatterns = [
    path("projects/<int:project_id>/raters/", views.raters_page, name="raters_page"),
    path("projects/<int:project_id>/raters/add/", views.rater_add, name="rater_add"),
    path("projects/<int:project_id>/raters/import/", views.rater_import, name="rater_import"),
    path(
        "projects/<int:project_id>/raters/<int:rater_id>/run/",
        views.rater_run,
        name="rater_run",
    ),
    path(
        "projects/<int:project_id>/raters/<int:rater_id>/enlist/",
        views.rater_enlist,
        name="rater_enlist",
    ),
    path(
        "projects/<int:project_id>/raters/runs/<int:run_id>/",
        views.rater_run_status,
        name="rater_run_status",
    ),
    path(
        "projects/<int:project_id>/estimates/",
        estimate_views.estimates_page,
        name="estimates_page",
    ),
    path("api/projects/<int:project_id>/raters/", api.raters_api, name="api_raters"),
    path(
        "api/projects/<int:project_id>/estimates/",
        estimate_views.estimates_api,
        name="api_estimates",
    ),
    path(
        "api/projects/<int:project_id>/raters/<int:rater_id>/enlist/",
        api.rater_enlist_api,
        name="api_rater_enlist",
    ),
]
