from django.urls import path

from ingest import views

urlpatterns = [
    path("repositories/", views.repositories, name="repositories"),
    path("repositories/<int:repository_id>/", views.repository_edit, name="repository_edit"),
    path("repositories/<int:repository_id>/sync/", views.repository_sync, name="repository_sync"),
    path("sync-runs/<int:run_id>/", views.sync_run, name="sync_run"),
]
