"""URLs of the pages that span apps: home, a project's page, a new project, the lead's invites and
accounts, and the taxonomy pages (the global /taxonomy/ page and the project-scoped ones)."""

from django.urls import path

from front import project_views
from front import taxonomy_views as views

urlpatterns = [
    path("", project_views.home, name="home"),
    path("projects/new/", project_views.project_create, name="project_create"),
    path("projects/<int:project_id>/", project_views.project_detail, name="project_detail"),
    path("projects/<int:project_id>/invites/", project_views.create_invite, name="create_invite"),
    path(
        "projects/<int:project_id>/members/<int:member_id>/pseudonym/",
        project_views.rename_member,
        name="rename_member",
    ),
    path(
        "projects/<int:project_id>/volunteers/",
        project_views.add_volunteer,
        name="add_volunteer",
    ),
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
