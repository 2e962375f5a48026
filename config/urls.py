"""The site's URL conf: each app's routes, the admin and the login pages (annotator.urls); the
pages that span apps (home, a project's page, the taxonomy pages) are `front.urls`."""

from django.contrib import admin
from django.urls import include, path
from django.views.i18n import JavaScriptCatalog

from config import observability, views

# The database away is a 503 with Retry-After wherever it is noticed (config.unavailable).
handler500 = "config.unavailable.server_error"

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon, name="favicon"),
    # Prometheus's scrape, for allowed addresses or a token (config.observability).
    path("metrics", observability.metrics, name="metrics"),
    path("admin/", admin.site.urls),
    # The interface's JavaScript strings in the reader's language (gettext() in static/js).
    path("jsi18n/", JavaScriptCatalog.as_view(), name="javascript-catalog"),
    # First: its login page (with the identity providers) before Django's.
    path("", include("annotator.urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("front.urls")),
    path("", include("labeling.urls")),
    path("", include("ingest.urls")),
    path("", include("agreement.urls")),
    path("", include("interviews.urls")),
    path("", include("raters.urls")),
    path("", include("dataset.urls")),
]
