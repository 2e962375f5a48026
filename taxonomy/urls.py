from django.urls import path

from taxonomy import views

urlpatterns = [
    path("", views.latest, name="taxonomy"),
    path("<int:version_id>/", views.version_detail, name="taxonomy_version"),
]
