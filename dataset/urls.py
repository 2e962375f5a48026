from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from annotator.api import ObtainToken
from dataset import (
    api,
    docs,
    recall_api,
    recall_views,
    release_api,
    release_views,
    table_one_api,
    table_one_views,
    upload_views,
    views,
)

urlpatterns = [
    path("projects/<int:project_id>/exports/", views.exports, name="exports"),
    path(
        "projects/<int:project_id>/exports/details/<str:type_code>.csv",
        views.export_details_csv,
        name="export_details_csv",
    ),
    path("projects/<int:project_id>/exports/<int:job_id>/", views.export_job, name="export_job"),
    path(
        "projects/<int:project_id>/exports/<int:job_id>/download/",
        views.export_download,
        name="export_download",
    ),
    path("api/", api.ApiRoot.as_view(), name="api_root"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api_schema"),
    path("api/docs/", docs.api_docs, name="api_docs"),
    path("api/token/", ObtainToken.as_view(), name="api_token"),
    path("api/projects/", api.ProjectList.as_view(), name="api_projects"),
    path("api/projects/<int:project_id>/", api.ProjectDetail.as_view(), name="api_project"),
    path("api/projects/<int:project_id>/issues/", api.IssueList.as_view(), name="api_issues"),
    path(
        "api/projects/<int:project_id>/annotations/",
        api.AnnotationList.as_view(),
        name="api_annotations",
    ),
    path(
        "api/projects/<int:project_id>/resolutions/",
        api.ResolutionList.as_view(),
        name="api_resolutions",
    ),
    path(
        "api/projects/<int:project_id>/agreement/",
        api.AgreementView.as_view(),
        name="api_agreement",
    ),
    path("api/projects/<int:project_id>/exports/", api.ExportList.as_view(), name="api_exports"),
    path(
        "api/projects/<int:project_id>/exports/<int:pk>/",
        api.ExportDetail.as_view(),
        name="api_export",
    ),
    path(
        "api/projects/<int:project_id>/exports/<int:pk>/download/",
        api.ExportDownload.as_view(),
        name="api_export_download",
    ),
]

# Releases (issue #16): frozen, versioned datasets.
urlpatterns += [
    path("projects/<int:project_id>/releases/", release_views.releases, name="releases"),
    path(
        "projects/<int:project_id>/releases/<int:release_id>/",
        release_views.release_row,
        name="release_row",
    ),
    path(
        "projects/<int:project_id>/releases/<int:release_id>/download/",
        release_views.release_download,
        name="release_download",
    ),
    path(
        "projects/<int:project_id>/releases/<str:a>...<str:b>/",
        release_views.release_compare,
        name="release_compare",
    ),
    path(
        "api/projects/<int:project_id>/releases/",
        release_api.ReleaseList.as_view(),
        name="api_releases",
    ),
    path(
        "api/projects/<int:project_id>/releases/<int:pk>/",
        release_api.ReleaseDetail.as_view(),
        name="api_release",
    ),
    path(
        "api/projects/<int:project_id>/releases/<int:pk>/download/",
        release_api.ReleaseDownload.as_view(),
        name="api_release_download",
    ),
]

# Filter recall (issue #16): probes drawn from the dropped issues, and the estimate.
urlpatterns += [
    path("projects/<int:project_id>/recall/", recall_views.filter_recall, name="filter_recall"),
    path(
        "projects/<int:project_id>/recall/add/",
        recall_views.add_dropped,
        name="filter_recall_add",
    ),
    path("projects/<int:project_id>/recall/rank/", recall_views.rank, name="filter_recall_rank"),
    path(
        "projects/<int:project_id>/recall/ranking/",
        recall_views.ranking,
        name="filter_recall_ranking",
    ),
    path(
        "api/projects/<int:project_id>/recall/",
        recall_api.RecallReport.as_view(),
        name="api_filter_recall",
    ),
]

# Table I as JSON (issue #21): the page's records, by issue or by published row; the page
# here too since #29 (its estimated columns come from raters, which agreement may not import).
urlpatterns += [
    path("projects/<int:project_id>/table-one/", table_one_views.table_one_page, name="table_one"),
    path(
        "api/projects/<int:project_id>/table-one/",
        table_one_api.TableOne.as_view(),
        name="api_table_one",
    ),
]

# Uploading issues in the browser (issue #24).
urlpatterns += [
    path("projects/<int:project_id>/upload/", upload_views.upload_issues, name="upload_issues"),
    path(
        "projects/<int:project_id>/upload/<int:job_id>/",
        upload_views.upload_job,
        name="upload_job",
    ),
]
