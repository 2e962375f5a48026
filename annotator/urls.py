"""Home, health check, projects, invites and accounts made by a lead."""

from django.urls import path

from annotator import views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("invite/<str:token>/", views.invite, name="accept_invite"),
    path("projects/<int:project_id>/", views.project_detail, name="project_detail"),
    path("projects/<int:project_id>/invites/", views.create_invite, name="create_invite"),
    path("projects/<int:project_id>/volunteers/", views.add_volunteer, name="add_volunteer"),
]
