"""URLs of labeling, progress, setup, the disagreement queue, resolutions (issue 4) and the
issue list (issue 14).

Labeling pages name a queue item by its random `public_id` (issue #20, F4), lead pages by its
row id (`item_id`)."""

from django.urls import path

from labeling import dashboard_views, guideline_views, issue_views, views

urlpatterns = [
    path("projects/<int:project_id>/label/", views.label_next, name="label_next"),
    path("projects/<int:project_id>/label/<int:public_id>/", views.label_issue, name="label_issue"),
    path("projects/<int:project_id>/label/previous/", views.label_previous, name="label_previous"),
    path(
        "projects/<int:project_id>/label/<int:public_id>/skip/",
        views.skip_issue,
        name="skip_issue",
    ),
    path(
        "projects/<int:project_id>/label/<int:public_id>/change-request/",
        views.request_change,
        name="request_change",
    ),
    path(
        "projects/<int:project_id>/label/taxonomy/<int:version_id>.json",
        views.label_taxonomy,
        name="label_taxonomy",
    ),
    path(
        "projects/<int:project_id>/guideline/",
        guideline_views.project_guideline,
        name="project_guideline",
    ),
    path("projects/<int:project_id>/my-progress/", views.my_progress, name="my_progress"),
    path("projects/<int:project_id>/setup/", views.project_setup, name="project_setup"),
    path(
        "projects/<int:project_id>/disagreements/",
        views.disagreement_queue,
        name="disagreement_queue",
    ),
    path("projects/<int:project_id>/issues/", issue_views.issue_list, name="issue_list"),
    path(
        "projects/<int:project_id>/issues/<int:item_id>/",
        issue_views.issue_detail,
        name="issue_detail",
    ),
    path(
        "projects/<int:project_id>/dashboard/",
        dashboard_views.lead_dashboard,
        name="lead_dashboard",
    ),
    path(
        "projects/<int:project_id>/resolve/<int:item_id>/",
        views.resolve_issue,
        name="resolve_issue",
    ),
]
