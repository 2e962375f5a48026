"""Accepting an invite (with a password or through an identity provider); the login page, the
identity providers' routes (django-allauth's, without its own sign-up and password pages); the
account's API token page."""

from allauth.socialaccount import views as social_views
from allauth.urls import build_provider_urlpatterns
from django.urls import include, path

from annotator import views

urlpatterns = [
    path("accounts/login/", views.LoginView.as_view(), name="login"),
    # The same page under allauth's name, for its links back to the login page.
    path("accounts/login/", views.LoginView.as_view(), name="account_login"),
    path(
        "accounts/sign-in/cancelled/",
        social_views.login_cancelled,
        name="socialaccount_login_cancelled",
    ),
    path("accounts/sign-in/error/", social_views.login_error, name="socialaccount_login_error"),
    # /accounts/github/login/, /accounts/oidc/<id>/login/ and their callbacks.
    path("accounts/", include(build_provider_urlpatterns())),
    path("invite/<str:token>/", views.invite, name="accept_invite"),
    path("invite/<str:token>/sign-in/", views.invite_sign_in, name="invite_sign_in"),
    path("account/api-token/", views.api_token, name="api_token_page"),
]
