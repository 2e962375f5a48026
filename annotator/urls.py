"""Accepting an invite (with a password or through an identity provider); the login page, the
identity providers' routes (django-allauth's, without its own sign-up and password pages); the
account's API token page; the language switcher."""

from allauth.socialaccount import views as social_views
from allauth.socialaccount.providers.github import views as github
from allauth.socialaccount.providers.openid_connect import views as oidc
from django.urls import path

from annotator import views
from annotator.signin import provider_view

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
    # The providers' routes (allauth's names): a provider not configured is a 404, one that
    # does not answer a 502 page.
    path("accounts/github/login/", provider_view(github.oauth2_login), name="github_login"),
    path(
        "accounts/github/login/callback/",
        provider_view(github.oauth2_callback),
        name="github_callback",
    ),
    path(
        "accounts/oidc/<str:provider_id>/login/",
        provider_view(oidc.login),
        name="openid_connect_login",
    ),
    path(
        "accounts/oidc/<str:provider_id>/login/callback/",
        provider_view(oidc.callback),
        name="openid_connect_callback",
    ),
    path("invite/<str:token>/", views.invite, name="accept_invite"),
    path("invite/<str:token>/sign-in/", views.invite_sign_in, name="invite_sign_in"),
    path("account/api-token/", views.api_token, name="api_token_page"),
    path("language/", views.set_language, name="set_language"),
]
