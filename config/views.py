"""The site's own endpoint: the health check."""

from django.db import connection
from django.http import HttpResponse


def healthz(request):
    """Liveness and database check for load balancers and docker compose."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return HttpResponse("ok", content_type="text/plain")
