"""Accepting an invite; the account's API token page."""

from django.urls import path

from annotator import views

urlpatterns = [
    path("invite/<str:token>/", views.invite, name="accept_invite"),
    path("account/api-token/", views.api_token, name="api_token_page"),
]
