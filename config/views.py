"""The site's own endpoints: the health check and /favicon.ico."""

from __future__ import annotations

from pathlib import Path

from django.contrib.staticfiles import finders
from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse


def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness and database check for load balancers and docker compose."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return HttpResponse("ok", content_type="text/plain")


def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico, which browsers ask for on pages that name no icon (the admin, DRF's)."""
    path = finders.find("favicon.ico")
    if path is None:
        raise Http404("no favicon.ico among the static files")
    response = HttpResponse(Path(path).read_bytes(), content_type="image/x-icon")
    response["Cache-Control"] = "public, max-age=86400"
    return response
