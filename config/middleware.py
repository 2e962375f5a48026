"""Middleware of our own: django-csp's, skipping responses no browser renders; input limits; a
page for a 405."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from csp.middleware import CSPMiddleware as _CSPMiddleware
from django.conf import settings
from django.core.exceptions import BadRequest, RequestDataTooBig, SuspiciousOperation
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.http.multipartparser import MultiPartParserError
from django.http.response import HttpResponseBase
from django.template.loader import render_to_string
from django.utils.cache import patch_vary_headers
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from lib import inputlimits


class CSPMiddleware(_CSPMiddleware):
    """django-csp's middleware without a policy on redirects.

    A browser renders nothing of a 3xx response and applies the policy of the page it is sent
    on to, so the header would never take effect; building it cost about 0.1 ms, and every
    labeled issue is two redirects (next issue, submit).
    """

    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        if 300 <= response.status_code < 400:
            return response
        return super().process_response(request, response)


class InputLimitsMiddleware:
    """Refuses a request that could only end in a 500: a NUL character or an oversized body.

    PostgreSQL cannot store a NUL character in text, and psycopg raises on one wherever it is
    sent, even in a lookup; so a NUL anywhere in the address, the query string, a cookie, a form
    field (name or value), an uploaded file's name or a JSON body's strings is answered here
    with a 400 naming where it is, before any view runs. A body larger than MAX_UPLOAD_BYTES is
    refused unread (413), JSON nested deeper than MAX_JSON_DEPTH with a 400 (Python's parser
    would recurse into RecursionError), and Django's own limits on form data
    (DATA_UPLOAD_MAX_MEMORY_SIZE, DATA_UPLOAD_MAX_NUMBER_FIELDS) with a message instead of a
    bare error page.

    File contents are left to the importers, which name the line at fault.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        try:
            problem = _input_problem(request)
        except RequestDataTooBig:
            problem = (413, "body", _too_big_message())
        except (SuspiciousOperation, MultiPartParserError, BadRequest) as exc:
            problem = (400, "body", str(exc) or gettext("the request body could not be read"))
        if problem is not None:
            return _refusal(request, *problem)
        return self.get_response(request)


def _shown(name: str) -> str:
    """A field name fit for a message: NULs visible, length bounded."""
    name = name.replace(inputlimits.NUL, "\\x00")
    return "'" + (name if len(name) <= 80 else name[:80] + "…") + "'"


# Where a NUL was found, as the message names it (the requests are answered in the reader's
# language; the field name itself is quoted as it came).
_KINDS = {
    "query": _("query parameter"),
    "cookie": _("cookie"),
    "form": _("form field"),
    "file": _("file name of field"),
}


def _nul_message(where: str) -> str:
    return gettext(
        "%(where)s contains a NUL character (\\x00), which cannot be stored; remove it"
    ) % {"where": where}


def _first_nul(
    pairs: Iterable[tuple[str, Sequence[str | None]]], kind: str
) -> tuple[int, str, str] | None:
    for key, values in pairs:
        if inputlimits.NUL in key:
            where = gettext("%(kind)s name %(name)s") % {"kind": _KINDS[kind], "name": _shown(key)}
            return 400, key, _nul_message(where)
        for value in values:
            if isinstance(value, str) and inputlimits.NUL in value:
                return 400, key, _nul_message(f"{_KINDS[kind]} {_shown(key)}")
    return None


def _input_problem(request: HttpRequest) -> tuple[int, str, str] | None:
    length = request.META.get("CONTENT_LENGTH") or "0"
    too_large = inputlimits.upload_too_large(int(length)) if length.isdecimal() else None
    if too_large:
        return 413, "body", gettext("the request body is %(size)s") % {"size": too_large}
    if inputlimits.NUL in request.path:
        return 400, "path", _nul_message(gettext("the address"))
    problem = _first_nul(request.GET.lists(), "query") or _first_nul(
        ((k, [v]) for k, v in request.COOKIES.items()), "cookie"
    )
    if problem or request.method in ("GET", "HEAD", "OPTIONS"):
        return problem
    content_type = request.content_type or ""
    if content_type in ("multipart/form-data", "application/x-www-form-urlencoded"):
        form = request.POST if request.method == "POST" else QueryDict(request.body)
        problem = _first_nul(form.lists(), "form")
        if problem is None and request.method == "POST":
            names = [(key, [f.name for f in files]) for key, files in request.FILES.lists()]
            problem = _first_nul(names, "file")
        return problem
    if content_type == "application/json" or content_type.endswith("+json"):
        return _json_problem(request.body)
    return None


def _json_problem(body: bytes) -> tuple[int, str, str] | None:
    try:
        data = inputlimits.loads(body)
    except inputlimits.JSONTooDeep as exc:
        return 400, "body", gettext("JSON body, %(problem)s") % {"problem": exc}
    except ValueError:
        return None  # not JSON (or not UTF-8): the view's parser says so with a 400
    where = inputlimits.find_nul(data)
    if where is not None:
        return 400, where, _nul_message(gettext("JSON body at %(path)s") % {"path": _shown(where)})
    return None


def _too_big_message() -> str:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return gettext(
        "the form or JSON data is larger than %(limit)s bytes (DATA_UPLOAD_MAX_MEMORY_SIZE)"
    ) % {"limit": f"{limit:,}"}


def _refusal(request: HttpRequest, status: int, field: str, message: str) -> HttpResponse:
    """A JSON error for the API (DRF's `detail` shape), plain text for pages."""
    wants_json = request.path.startswith("/api/") or "json" in request.headers.get("Accept", "")
    if wants_json:
        return JsonResponse({"detail": message, "field": field}, status=status)
    text = gettext("Bad request: %(message)s.") % {"message": message}
    return HttpResponse(text + "\n", status=status, content_type="text/plain; charset=utf-8")


class MethodNotAllowedPage:
    """Gives a page to the empty 405 that Django answers when an address that only takes a form
        (switching language, saving a pseudonym, starting a sync) is opened directly: a bookmark,
        a reload, a link pasted from the address bar. Without it the browser shows its own error
        page; with it the person reads what happened and finds the way back. The `Allow` header is
        kept. Answers with a body of their own (the API's JSON) are left as they are, and so is the
    answer to a client whose Accept header excludes HTML (no header, or */*, accepts it).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if (
            response.status_code != 405
            or not isinstance(response, HttpResponse)  # a streaming answer has no .content
            or response.content
            or not request.accepts("text/html")
        ):
            return response
        response.content = render_to_string("405.html", request=request)
        response["Content-Type"] = "text/html; charset=utf-8"
        patch_vary_headers(response, ["Accept"])  # the body depends on it
        return response
