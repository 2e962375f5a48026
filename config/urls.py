"""The site's URL conf: each app's routes, the admin and the login pages."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from config import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("annotator.urls")),
    path("", include("labeling.urls")),
    path("", include("ingest.urls")),
    path("", include("agreement.urls")),
    path("", include("interviews.urls")),
    path("", include("labeling.taxonomy_urls")),
    path("", include("raters.urls")),
    path("", include("dataset.urls")),
]
