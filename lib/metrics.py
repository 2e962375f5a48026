"""The site's Prometheus metrics (prometheus-client), counted where things happen.

The metrics are made on first use: prometheus_client costs ~50 ms to import, which a
management command that counts nothing should not pay. Each counting function is cheap (a
lock and an addition), so the labeling hot path may call it.

Processes. Without `PROMETHEUS_MULTIPROC_DIR` in the environment each process counts in
memory and `exposition()` reports that process alone (development, tests, a single worker).
With it (gunicorn's workers, a prefork Celery worker), every process writes its values to
files in that directory and `exposition()` adds them up (prometheus_client's multiprocess
mode): the variable must be set before the process starts, and the directory emptied when
the service starts (gunicorn.conf.py; docs/OPERATIONS.md, "Metrics and logs").

Gauges computed when scraped (the queue depth per project) are registered by the app that
knows the rows (`register_gauge`, from its `AppConfig.ready`) and run by the process that
answers the scrape, once per scrape.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

# Seconds: a request (the labeling pages answer in milliseconds, a search may take two).
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
# Seconds: a task (a sync part is seconds, an export or a release minutes).
TASK_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def multiprocess_dir() -> str | None:
    """The directory of prometheus_client's multiprocess mode, or None (one process)."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


@dataclass(frozen=True)
class _Metrics:
    request_seconds: Any
    requests: Any
    labels: Any
    tasks: Any
    task_seconds: Any
    forge_requests: Any
    forge_quota: Any
    jobs_requeued: Any


_MADE: list[_Metrics] = []  # the one set of metrics, once made
_MAKE_LOCK = threading.Lock()


def _metrics() -> _Metrics:
    """The metrics, made by the first caller. Under a lock: a registry refuses a second metric
    of the same name, so two threads making them at once (a gthread worker's first requests)
    would fail one request with a 500."""
    if _MADE:
        return _MADE[0]
    with _MAKE_LOCK:
        if not _MADE:
            _MADE.append(_make())
    return _MADE[0]


def _make() -> _Metrics:
    from prometheus_client import Counter, Gauge, Histogram

    return _Metrics(
        request_seconds=Histogram(
            "annotator_http_request_duration_seconds",
            "Time to answer a request, by view (URL name) and method.",
            ["view", "method"],
            buckets=REQUEST_BUCKETS,
        ),
        requests=Counter(
            "annotator_http_requests",
            "Requests answered, by view, method and status code.",
            ["view", "method", "status"],
        ),
        labels=Counter(
            "annotator_labels_submitted",
            "Labels stored by annotators, by project and kind (first label or revision).",
            ["project", "kind"],
        ),
        tasks=Counter(
            "annotator_celery_tasks",
            "Celery tasks run, by task name and outcome (success, failure, retry, ...).",
            ["task", "outcome"],
        ),
        task_seconds=Histogram(
            "annotator_celery_task_duration_seconds",
            "Time a Celery task ran, by task name and outcome.",
            ["task", "outcome"],
            buckets=TASK_BUCKETS,
        ),
        forge_requests=Counter(
            "annotator_forge_requests",
            "Requests sent to a forge's API, by forge and HTTP status (or error kind).",
            ["forge", "status"],
        ),
        forge_quota=Gauge(
            "annotator_forge_quota_remaining",
            "Requests left in the forge's rate-limit window, as its last answer said.",
            ["forge"],
            multiprocess_mode="mostrecent",
        ),
        jobs_requeued=Counter(
            "annotator_jobs_requeued",
            "Jobs found running under a worker that is gone, their task queued again, by kind.",
            ["kind"],
        ),
    )


def observe_request(view: str, method: str, status: int, seconds: float) -> None:
    """One answered request: its latency under its view's name, and its status."""
    m = _metrics()
    method = method if method in HTTP_METHODS else "other"
    m.request_seconds.labels(view, method).observe(seconds)
    m.requests.labels(view, method, str(status)).inc()


def label_submitted(project_id: int, kind: str) -> None:
    """A label stored (`kind`: "first" or "revision")."""
    _metrics().labels.labels(str(project_id), kind).inc()


def task_finished(task: str, outcome: str, seconds: float | None) -> None:
    """A Celery task that ended with `outcome`, after `seconds` (None: not timed)."""
    m = _metrics()
    m.tasks.labels(task, outcome).inc()
    if seconds is not None:
        m.task_seconds.labels(task, outcome).observe(seconds)


def forge_response(forge: str, status: int | str, remaining: int | None) -> None:
    """A forge's answer (or "timeout", "connection" for none) and its quota left, if it said."""
    m = _metrics()
    m.forge_requests.labels(forge, str(status)).inc()
    if remaining is not None:
        m.forge_quota.labels(forge).set(remaining)


def job_requeued(kind: str) -> None:
    """A job of `kind` (`lib.jobs.Job.JOB_KIND`) left running by a worker that is gone, its
    task queued again (`annotator.jobsweep`)."""
    _metrics().jobs_requeued.labels(kind).inc()


# -- gauges computed at scrape time ---------------------------------------------------------


@dataclass(frozen=True)
class ScrapeGauge:
    name: str
    documentation: str
    labelnames: tuple[str, ...]
    # Called at each scrape: (label values, value) pairs.
    read: Callable[[], Iterable[tuple[tuple[str, ...], float]]]


_GAUGES: dict[str, ScrapeGauge] = {}
_LOCK = threading.Lock()


def register_gauge(gauge: ScrapeGauge) -> None:
    """Add (or replace, by name) a gauge that is read when /metrics is scraped."""
    with _LOCK:
        _GAUGES[gauge.name] = gauge


class _ScrapeCollector:
    def collect(self) -> Iterable[Any]:
        from prometheus_client.core import GaugeMetricFamily

        for gauge in list(_GAUGES.values()):
            family = GaugeMetricFamily(
                gauge.name, gauge.documentation, labels=list(gauge.labelnames)
            )
            for labels, value in gauge.read():
                family.add_metric(list(labels), value)
            yield family


def exposition(scrape_gauges: bool = True) -> tuple[bytes, str]:
    """The metrics in Prometheus's text format, and its content type: every process's values
    in multiprocess mode, this process's otherwise, plus the gauges read now."""
    from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
    from prometheus_client.registry import CollectorRegistry

    _metrics()  # made in this process too (in multiprocess mode, the scraping one)
    directory = multiprocess_dir()
    if directory:
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=directory)
        body = generate_latest(registry)
    else:
        body = generate_latest(REGISTRY)
    if scrape_gauges and _GAUGES:
        now = CollectorRegistry(auto_describe=False)
        now.register(_ScrapeCollector())
        body += generate_latest(now)
    return body, CONTENT_TYPE_LATEST
