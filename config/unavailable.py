"""The database away: a 503 with `Retry-After`, never a 500 (issue 30, docs/OPERATIONS.md "Faults").

While PostgreSQL restarts, fails over or is stopped, every query raises Django's
`OperationalError` (or `InterfaceError`): connection refused, "the database system is starting
up", "terminating connection due to administrator command", a connection closed under a
query. Those are answered with 503 Service Unavailable and `Retry-After`, a short page in the
reader's language (or DRF's JSON shape under /api/), rendered without the session or the
database. Nothing half-done stays behind: a submission is one transaction (or one PL/pgSQL
call), which PostgreSQL rolls back when its connection dies.

Two places catch them: `DatabaseUnavailableMiddleware.process_exception` for a view's error
(in DEBUG too), and `server_error`, the site's `handler500`, for one raised anywhere else
(a middleware reading the session or the user). Other database errors (a deadlock, a
statement timeout, a bug) stay what they were.

The app reconnects by itself: a connection that failed is closed at the end of its request
(Django's `errors_occurred`), and with `CONN_HEALTH_CHECKS` a persistent connection that died
while idle is replaced before its first query of a request (lib.sql checks it too).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.template.loader import render_to_string
from django.utils.translation import gettext
from django.views import defaults

log = logging.getLogger(__name__)

# SQLSTATEs of a server that is away or going: class 08 (connection exception), shutdown by an
# administrator or a crash, "the database system is starting up / shutting down", too many
# connections. A psycopg error with no SQLSTATE is one the client raised itself: the
# connection refused, lost or closed.
_AWAY_STATES = ("57P01", "57P02", "57P03", "53300")


def database_unavailable(exc: BaseException | None) -> bool:
    """Whether `exc` says the database cannot be reached (rather than refused a statement)."""
    if isinstance(exc, InterfaceError):
        return True
    if not isinstance(exc, OperationalError):
        return False
    state = getattr(exc.__cause__, "sqlstate", None)
    return state is None or state.startswith("08") or state in _AWAY_STATES


def unavailable_response(request: HttpRequest) -> HttpResponse:
    """503 with Retry-After: JSON (`detail`) for the API and JSON clients, a page otherwise."""
    retry_after = settings.UNAVAILABLE_RETRY_AFTER
    message = gettext(
        "The database cannot be reached at the moment (a restart or maintenance). Nothing "
        "saved before is lost. Try again in a few seconds."
    )
    wants_json = request.path.startswith("/api/") or "json" in request.headers.get("Accept", "")
    response: HttpResponse
    if wants_json:
        response = JsonResponse({"detail": message, "retry_after": retry_after}, status=503)
    else:
        page = render_to_string(
            "503.html",
            {
                "message": message,
                "resend": request.method not in ("GET", "HEAD"),
                "retry_after": retry_after,
            },
        )
        response = HttpResponse(page, status=503, content_type="text/html; charset=utf-8")
    response["Retry-After"] = str(retry_after)
    response["Cache-Control"] = "no-store"
    return response


class DatabaseUnavailableMiddleware:
    """Answers a view that lost the database with a 503 and Retry-After instead of a 500."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not database_unavailable(exception):
            return None
        log.warning("database unavailable: %s %s: %s", request.method, request.path, exception)
        return unavailable_response(request)


def server_error(request: HttpRequest, template_name: str = "500.html") -> HttpResponse:
    """The site's handler500: a 503 when the error was the database going away (raised in a
    middleware, outside any view), Django's own 500 page otherwise."""
    if database_unavailable(sys.exc_info()[1]):
        return unavailable_response(request)
    return defaults.server_error(request, template_name)
