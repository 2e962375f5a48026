"""Metrics and request ids: the middleware, `/metrics` and its access rule, Celery's signals.

- `RequestMiddleware` (first in MIDDLEWARE) gives each request an id (`config.requestid`:
  a sane incoming `X-Request-ID`, else a fresh one), returns it in the response's
  `X-Request-ID`, observes the request's latency under its view's URL name
  (`lib.metrics.observe_request`) and, with `LOG_REQUESTS`, logs one line per request with
  its path (never the query string), status and duration.
- `metrics` answers Prometheus (`lib.metrics.exposition`) to a client whose address is in
  `METRICS_ALLOWED_IPS`, or that presents `Authorization: Bearer <METRICS_TOKEN>` (compared
  in constant time); anyone else gets a 403. The client's address is `REMOTE_ADDR`, or, when
  that is one of `METRICS_TRUSTED_PROXIES`, the nearest address in `X-Forwarded-For` that is
  not a trusted proxy (a client can write anything in that header; only what the trusted
  proxies appended counts).
- Celery: a task queued during a request carries the request's id in its headers
  (`before_task_publish`); the worker sets it for the task's logs (`task_prerun`) and counts
  the task's outcome and duration (`task_postrun`). With `WORKER_METRICS_PORT` a worker
  answers Prometheus itself, on `WORKER_METRICS_ADDR` (127.0.0.1 unless set), under the same
  access rule (docs/OPERATIONS.md, "Metrics and logs").
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from config import requestid
from lib import metrics as site_metrics

log = logging.getLogger("annotator.requests")
task_log = logging.getLogger("annotator.tasks")

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


# -- who may read the metrics ---------------------------------------------------------------


def parse_networks(entries: Iterable[str], setting: str) -> tuple[Network, ...]:
    """CIDRs (or single addresses) of a setting; a bad entry stops start-up naming it."""
    networks = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ImproperlyConfigured(
                f"{setting}: {entry!r} is not an IP address or network (CIDR)"
            ) from None
    return tuple(networks)


@functools.cache
def _networks(setting: str, entries: tuple[str, ...]) -> tuple[Network, ...]:
    return parse_networks(entries, setting)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text.strip().split("%")[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def _within(address: Any, networks: tuple[Network, ...]) -> bool:
    return address is not None and any(address in network for network in networks)


def client_address(
    remote_addr: str, forwarded_for: str | None, trusted: tuple[Network, ...]
) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The client's address: `remote_addr`, unless it is a trusted proxy; then the nearest
    address of `X-Forwarded-For` (read from the right) that is not a trusted proxy. A forwarded
    request from a proxy that is not trusted has no address (None): a reverse proxy on the same
    host would otherwise pass every client off as 127.0.0.1."""
    address = _address(remote_addr)
    if not _within(address, trusted):
        return None if forwarded_for else address
    if not forwarded_for:
        return address
    for hop in reversed(forwarded_for.split(",")):
        address = _address(hop)
        if address is None:
            return None  # garbled: trust nothing further left
        if not _within(address, trusted):
            return address
    return address


def token_matches(header: str | None, token: str) -> bool:
    """Whether an Authorization header is `Bearer <token>`, compared in constant time."""
    if not token or not header:
        return False
    scheme, _, presented = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(presented.strip().encode(), token.encode())


def may_read_metrics(remote_addr: str, headers: Any) -> bool:
    """The access rule of /metrics (and of a worker's metrics port)."""
    if token_matches(headers.get("Authorization"), settings.METRICS_TOKEN):
        return True
    allowed = _networks("METRICS_ALLOWED_IPS", tuple(settings.METRICS_ALLOWED_IPS))
    trusted = _networks("METRICS_TRUSTED_PROXIES", tuple(settings.METRICS_TRUSTED_PROXIES))
    address = client_address(remote_addr, headers.get("X-Forwarded-For"), trusted)
    return _within(address, allowed)


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus's scrape: the site's metrics in its text format."""
    if not may_read_metrics(request.META.get("REMOTE_ADDR", ""), request.headers):
        raise PermissionDenied
    body, content_type = site_metrics.exposition()
    response = HttpResponse(body, content_type=content_type)
    response["Cache-Control"] = "no-store"
    return response


# -- requests ----------------------------------------------------------------------------------


# Path parameters whose value is a secret (an invite's token): never written to a log.
SECRET_PARAMETERS = ("token", "key", "secret", "uidb64")


def logged_path(request: HttpRequest) -> str:
    """The request's path as a log line may carry it: a secret path parameter (an invite link's
    token) replaced by "…"; an address that names no view by "unresolved" (it may be anything)."""
    match = request.resolver_match
    if match is None:
        return "unresolved"
    path = request.path
    for name, value in match.kwargs.items():
        if any(part in name for part in SECRET_PARAMETERS) and str(value):
            path = path.replace(str(value), "…")
    return path


class RequestMiddleware:
    """The request's id, its latency by view and, with LOG_REQUESTS, one log line."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.log_requests = settings.LOG_REQUESTS

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        rid = requestid.sane(request.headers.get(requestid.HEADER)) or requestid.new()
        token = requestid.current.set(rid)
        try:
            response = self.get_response(request)
            seconds = time.perf_counter() - started
            match = request.resolver_match
            view = match.view_name if match is not None else "unresolved"
            site_metrics.observe_request(view, request.method or "", response.status_code, seconds)
            response[requestid.HEADER] = rid
            if self.log_requests:
                path = logged_path(request)
                log.info(
                    "%s %s %s",
                    request.method,
                    path,
                    response.status_code,
                    extra={
                        "path": path,
                        "method": request.method,
                        "view": view,
                        "status": response.status_code,
                        "duration": round(seconds, 6),
                    },
                )
            return response
        finally:
            requestid.current.reset(token)


# -- Celery --------------------------------------------------------------------------------------

_started: dict[str, float] = {}
_tokens: dict[str, Any] = {}


def _before_publish(headers: dict | None = None, **_: Any) -> None:
    rid = requestid.current.get()
    if rid and headers is not None:
        headers.setdefault(requestid.TASK_HEADER, rid)


def _task_prerun(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    if task_id is None:
        return
    rid = requestid.sane(getattr(task.request, requestid.TASK_HEADER, None)) if task else None
    _tokens[task_id] = requestid.current.set(rid or requestid.current.get())
    _started[task_id] = time.monotonic()
    task_log.info(
        "task %s started", getattr(task, "name", "?"),
        extra={"task": getattr(task, "name", None), "task_id": task_id},
    )  # fmt: skip


def _task_postrun(
    task_id: str | None = None, task: Any = None, state: str | None = None, **_: Any
) -> None:
    if task_id is None:
        return
    started = _started.pop(task_id, None)
    seconds = time.monotonic() - started if started is not None else None
    name = getattr(task, "name", None) or "unknown"
    outcome = (state or "unknown").lower()
    site_metrics.task_finished(name, outcome, seconds)
    task_log.info(
        "task %s %s", name, outcome,
        extra={
            "task": name, "task_id": task_id, "outcome": outcome,
            "duration": round(seconds, 6) if seconds is not None else None,
        },
    )  # fmt: skip
    token = _tokens.pop(task_id, None)
    if token is not None:
        try:
            requestid.current.reset(token)
        except ValueError:  # set in another context (a thread pool): just clear it
            requestid.current.set(None)


def _worker_ready(**_: Any) -> None:
    """With WORKER_METRICS_PORT, this worker answers Prometheus on that port."""
    port = settings.WORKER_METRICS_PORT
    if port:
        serve_metrics(settings.WORKER_METRICS_ADDR, port)


def connect_celery_signals() -> None:
    """Called once, by config.celery: every process that publishes a task (request ids ride in
    its headers) or runs one imports it first."""
    from celery import signals

    signals.before_task_publish.connect(_before_publish, weak=False)
    signals.task_prerun.connect(_task_prerun, weak=False)
    signals.task_postrun.connect(_task_postrun, weak=False)
    signals.worker_ready.connect(_worker_ready, weak=False)


def metrics_app(environ: dict, start_response: Callable) -> list[bytes]:
    """A WSGI app for a worker's metrics port, under /metrics's access rule."""
    headers = {
        "Authorization": environ.get("HTTP_AUTHORIZATION"),
        "X-Forwarded-For": environ.get("HTTP_X_FORWARDED_FOR"),
    }
    if not may_read_metrics(environ.get("REMOTE_ADDR", ""), headers):
        start_response("403 Forbidden", [("Content-Type", "text/plain")])
        return [b"forbidden\n"]
    # A worker reports its tasks; the queue's gauges are the web's to read.
    body, content_type = site_metrics.exposition(scrape_gauges=False)
    start_response("200 OK", [("Content-Type", content_type)])
    return [body]


def serve_metrics(addr: str, port: int) -> threading.Thread:
    """Serve `metrics_app` on addr:port from a daemon thread; returns the thread."""
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    class _Quiet(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = make_server(addr, port, metrics_app, handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, name="metrics", daemon=True)
    thread.start()
    task_log.info("metrics served on %s:%s", addr, server.server_port)
    return thread
