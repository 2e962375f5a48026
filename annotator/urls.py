"""Accepting an invite."""

from django.urls import path

from annotator import views

urlpatterns = [
    path("invite/<str:token>/", views.invite, name="accept_invite"),
]
