"""Taxonomy pages: the global /taxonomy/ page and the project-scoped ones."""

from django.urls import path

from labeling import taxonomy_views as views

urlpatterns = [
    path("taxonomy/", views.taxonomy_latest, name="taxonomy"),
    path("taxonomy/<int:version_id>/", views.taxonomy_version_detail, name="taxonomy_version"),
    path(
        "projects/<int:project_id>/taxonomy/proposals/",
        views.proposal_list,
        name="taxonomy_proposals",
    ),
    path(
        "projects/<int:project_id>/taxonomy/proposals/import/",
        views.proposals_import,
        name="taxonomy_proposals_import",
    ),
    path(
        "projects/<int:project_id>/taxonomy/proposals/<int:proposal_id>/vote/",
        views.proposal_vote,
        name="taxonomy_proposal_vote",
    ),
    path(
        "projects/<int:project_id>/taxonomy/proposals/<int:proposal_id>/reject/",
        views.proposal_reject,
        name="taxonomy_proposal_reject",
    ),
    path(
        "projects/<int:project_id>/taxonomy/versions/", views.version_list, name="taxonomy_versions"
    ),
    path(
        "projects/<int:project_id>/taxonomy/versions/<int:version_id>/export/",
        views.version_export,
        name="taxonomy_export",
    ),
    path(
        "projects/<int:project_id>/taxonomy/versions/<int:version_id>/<str:type_code>.csv",
        views.version_csv,
        name="taxonomy_version_csv",
    ),
    path(
        "projects/<int:project_id>/taxonomy/import/", views.version_import, name="taxonomy_import"
    ),
    path("projects/<int:project_id>/taxonomy/diff/", views.version_diff, name="taxonomy_diff"),
    path("projects/<int:project_id>/taxonomy/edit/", views.edit, name="taxonomy_edit"),
    path(
        "projects/<int:project_id>/taxonomy/details/",
        views.detail_mapping,
        name="taxonomy_details",
    ),
    path(
        "projects/<int:project_id>/taxonomy/details/<str:type_code>.csv",
        views.detail_csv,
        name="taxonomy_details_csv",
    ),
]
