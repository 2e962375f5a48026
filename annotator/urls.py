"""Invites and accounts made by a lead."""

from django.urls import path

from annotator import views

urlpatterns = [
    path("invite/<str:token>/", views.invite, name="accept_invite"),
    path("projects/<int:project_id>/invites/", views.create_invite, name="create_invite"),
    path("projects/<int:project_id>/volunteers/", views.add_volunteer, name="add_volunteer"),
]
