"""/metrics and the request id: who may scrape, what a request leaves in the metrics and the
logs, and how its id reaches the tasks it queues.

Personas: Prometheus on the server itself (127.0.0.1), a monitoring host on the office network
listed in METRICS_ALLOWED_IPS, a stranger on the internet (203.0.113.9, TEST-NET-3), and the
reverse proxy in front of the site (10.0.0.5).
"""

from __future__ import annotations

import io
import json
import logging
import runpy
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from celery import signals
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from django.urls import reverse

from config import requestid
from config.jsonlog import JsonFormatter
from config.observability import client_address, parse_networks, token_matches
from lib import metrics
from tests.metrics_helpers import value

ROOT = Path(__file__).resolve().parent.parent
PROMETHEUS = "127.0.0.1"
MONITORING = "198.51.100.7"
STRANGER = "203.0.113.9"
PROXY = "10.0.0.5"
TOKEN = "scrape-token-4f1c9a7e2b"


def scrape(client: Client, address: str, **headers: str):
    return client.get("/metrics", REMOTE_ADDR=address, **headers)


# -- who may scrape ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_metrics_endpoint_refuses_an_unlisted_client(client):
    # The probe can fire: Prometheus on the server itself is let in by the default allowlist.
    allowed = scrape(client, PROMETHEUS)
    assert allowed.status_code == 200
    assert allowed["Content-Type"].startswith("text/plain")
    assert b"annotator_http_request_duration_seconds" in allowed.content
    refused = scrape(client, STRANGER)
    assert refused.status_code == 403
    assert b"annotator_" not in refused.content


@pytest.mark.django_db
def test_a_listed_network_is_let_in_and_its_neighbours_are_not(client, settings):
    settings.METRICS_ALLOWED_IPS = ["198.51.100.0/24"]
    assert scrape(client, MONITORING).status_code == 200
    assert scrape(client, "198.51.101.7").status_code == 403
    # The default's loopback is no longer listed once the setting names other networks.
    assert scrape(client, PROMETHEUS).status_code == 403


@pytest.mark.django_db
def test_a_token_lets_an_unlisted_client_in_and_a_wrong_one_does_not(client, settings):
    settings.METRICS_TOKEN = TOKEN
    assert scrape(client, STRANGER, HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200
    assert scrape(client, STRANGER, HTTP_AUTHORIZATION=f"bearer {TOKEN}").status_code == 200
    for wrong in (f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", "Bearer ", f"Token {TOKEN}", TOKEN):
        assert scrape(client, STRANGER, HTTP_AUTHORIZATION=wrong).status_code == 403, wrong
    assert scrape(client, STRANGER).status_code == 403


@pytest.mark.django_db
def test_no_token_is_accepted_when_none_is_set(client, settings):
    settings.METRICS_TOKEN = ""
    assert scrape(client, STRANGER, HTTP_AUTHORIZATION="Bearer ").status_code == 403
    assert not token_matches("Bearer ", "")


@pytest.mark.django_db
def test_behind_the_proxy_the_client_is_what_the_proxy_saw(client, settings):
    settings.METRICS_TRUSTED_PROXIES = [PROXY]
    # Prometheus on the proxy's host: the proxy appended 127.0.0.1.
    assert scrape(client, PROXY, HTTP_X_FORWARDED_FOR=PROMETHEUS).status_code == 200
    # A stranger who writes 127.0.0.1 into the header himself: the proxy appended his address.
    forged = f"{PROMETHEUS}, {STRANGER}"
    assert scrape(client, PROXY, HTTP_X_FORWARDED_FOR=forged).status_code == 403
    # The same header straight from the stranger (not through the proxy) counts for nothing.
    assert scrape(client, STRANGER, HTTP_X_FORWARDED_FOR=PROMETHEUS).status_code == 403
    # Without a trusted proxy, the proxy's own header is not read either.
    settings.METRICS_TRUSTED_PROXIES = []
    assert scrape(client, PROXY, HTTP_X_FORWARDED_FOR=PROMETHEUS).status_code == 403


def test_client_address_reads_forwarded_hops_from_the_right():
    trusted = parse_networks(["10.0.0.0/8"], "METRICS_TRUSTED_PROXIES")
    assert str(client_address("10.0.0.5", "1.2.3.4, 5.6.7.8, 10.0.0.9", trusted)) == "5.6.7.8"
    assert client_address("10.0.0.5", "5.6.7.8, garbage", trusted) is None
    assert str(client_address("::ffff:127.0.0.1", None, trusted)) == "127.0.0.1"
    # A proxy on the same host that is not listed as trusted: its clients are nobody.
    assert client_address("127.0.0.1", "203.0.113.9", trusted) is None


def test_a_bad_network_in_a_setting_is_named():
    with pytest.raises(ImproperlyConfigured, match=r"METRICS_ALLOWED_IPS: '10\.0\.0\.300'"):
        parse_networks(["127.0.0.1", "10.0.0.300"], "METRICS_ALLOWED_IPS")


def test_only_get_is_answered(client):
    assert client.post("/metrics", REMOTE_ADDR=PROMETHEUS).status_code == 405


# -- what a request leaves behind -------------------------------------------------------------


def _scraped(client: Client) -> str:
    response = scrape(client, PROMETHEUS)
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.django_db
def test_a_requests_latency_is_observed_under_its_view_name(client, project, annotator):
    client.force_login(annotator)
    before = _scraped(client)
    name = "annotator_http_request_duration_seconds_count"
    url = reverse("my_progress", args=[project.pk])
    for _ in range(3):
        assert client.get(url).status_code == 200
    after = _scraped(client)
    view = {"view": "my_progress", "method": "GET"}
    assert value(after, name, **view) - value(before, name, **view) == 3
    statuses = "annotator_http_requests_total"
    labels = {**view, "status": "200"}
    assert value(after, statuses, **labels) - value(before, statuses, **labels) == 3
    # The scrape before this one is counted too, under the metrics view.
    assert value(after, name, view="metrics", method="GET") >= 1
    # An address that names no view is counted as such, not by its path.
    client.get("/no/such/page/")
    again = _scraped(client)
    unresolved = {"view": "unresolved", "method": "GET"}
    assert value(again, name, **unresolved) - value(after, name, **unresolved) == 1


# -- request ids and JSON lines -----------------------------------------------------------------


@pytest.fixture
def json_lines():
    """JSON lines of the request logger and Django's, as LOG_FORMAT=json writes them."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(requestid.RequestIdFilter())
    loggers = [logging.getLogger(n) for n in ("annotator.requests", "annotator.tasks", "django")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)

    def read() -> list[dict]:
        return [json.loads(line) for line in stream.getvalue().splitlines()]

    yield read
    for logger, level in zip(loggers, levels, strict=True):
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.mark.django_db
def test_each_request_gets_an_id_and_a_json_log_line_with_it(settings, json_lines, annotator):
    settings.LOG_REQUESTS = True
    client = Client()  # its middleware reads LOG_REQUESTS when it is made
    client.force_login(annotator)
    first = client.get(reverse("home"))
    second = client.get(reverse("home"))
    ids = [first["X-Request-ID"], second["X-Request-ID"]]
    assert all(requestid.sane(i) for i in ids) and ids[0] != ids[1]
    lines = [line for line in json_lines() if line["logger"] == "annotator.requests"]
    assert [line["request_id"] for line in lines] == ids
    line = lines[0]
    assert line["level"] == "INFO"
    assert line["path"] == reverse("home") and line["status"] == 200
    assert 0 < line["duration"] < 30
    assert datetime.fromisoformat(line["timestamp"]).utcoffset().total_seconds() == 0
    assert line["message"] == f"GET {reverse('home')} 200"
    # Outside a request there is no id.
    assert requestid.get() is None
    # An invite link's token never reaches the log.
    client.get(reverse("accept_invite", args=["s3cret-invite-token"]))
    logged = [line["path"] for line in json_lines() if line["logger"] == "annotator.requests"]
    assert "/invite/…/" in logged and not any("s3cret" in p for p in logged)


@pytest.mark.django_db
def test_a_sane_incoming_request_id_is_kept_and_an_odd_one_replaced(settings, json_lines):
    settings.LOG_REQUESTS = True
    client = Client()
    kept = client.get("/healthz", HTTP_X_REQUEST_ID="lb-7f3a9c21.0042")
    assert kept["X-Request-ID"] == "lb-7f3a9c21.0042"
    for odd in ("short", "has space in it", "x" * 200, 'quote"injection-1234', "ünïcode-12345"):
        replaced = client.get("/healthz", HTTP_X_REQUEST_ID=odd)
        assert replaced["X-Request-ID"] != odd and requestid.sane(replaced["X-Request-ID"])
    ids = [line["request_id"] for line in json_lines()]
    assert ids[0] == "lb-7f3a9c21.0042" and len(ids) == 6


@pytest.mark.django_db
def test_the_query_string_and_the_authorization_header_stay_out_of_the_log(settings, json_lines):
    settings.LOG_REQUESTS = True
    settings.METRICS_TOKEN = TOKEN
    client = Client()
    client.get("/metrics?token=hunter2", REMOTE_ADDR=STRANGER, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    client.get("/metrics?token=hunter2", REMOTE_ADDR=STRANGER, HTTP_AUTHORIZATION="Bearer nope")
    lines = json_lines()
    assert {line.get("status") for line in lines} >= {200, 403}
    text = json.dumps(lines)
    assert "hunter2" not in text and TOKEN not in text and "nope" not in text


class FakeTask:
    """What Celery's task signals pass as the task: its name and its request's headers."""

    def __init__(self, name: str, **headers: str) -> None:
        self.name = name
        self.request = SimpleNamespace(**headers)


def test_a_task_queued_in_a_request_carries_its_id_into_the_worker(json_lines):
    # The signal path a real worker takes (tests/test_observability_worker.py runs one):
    # the publishing side puts the id in the message headers, the worker side reads it back.
    headers: dict = {}
    token = requestid.current.set("req-1234567890ab")
    try:
        signals.before_task_publish.send(sender="dataset.tasks.run_export", headers=headers)
    finally:
        requestid.current.reset(token)
    assert headers[requestid.TASK_HEADER] == "req-1234567890ab"
    task = FakeTask("dataset.tasks.run_export", **headers)
    signals.task_prerun.send(sender=task, task_id="t-1", task=task)
    assert requestid.get() == "req-1234567890ab"
    signals.task_postrun.send(sender=task, task_id="t-1", task=task, state="SUCCESS")
    assert requestid.get() is None
    lines = [line for line in json_lines() if line["logger"] == "annotator.tasks"]
    assert [line["request_id"] for line in lines] == ["req-1234567890ab"] * 2
    assert lines[-1]["outcome"] == "success" and lines[-1]["task_id"] == "t-1"


def test_a_tasks_outcome_and_duration_are_counted():
    task = FakeTask("tests.flaky")
    before, _ = metrics.exposition(scrape_gauges=False)
    for task_id, state in (("a", "SUCCESS"), ("b", "FAILURE"), ("c", "SUCCESS")):
        signals.task_prerun.send(sender=task, task_id=task_id, task=task)
        signals.task_postrun.send(sender=task, task_id=task_id, task=task, state=state)
    after, _ = metrics.exposition(scrape_gauges=False)
    total, seconds = "annotator_celery_tasks_total", "annotator_celery_task_duration_seconds_count"
    for outcome, n in (("success", 2), ("failure", 1)):
        labels = {"task": "tests.flaky", "outcome": outcome}
        assert value(after.decode(), total, **labels) - value(before.decode(), total, **labels) == n
        assert (
            value(after.decode(), seconds, **labels) - value(before.decode(), seconds, **labels)
            == n
        )


# -- the settings ----------------------------------------------------------------------------------


def _settings_with(monkeypatch, **env: str) -> dict:
    monkeypatch.setenv("SECRET_KEY", "x" * 50)
    for name, val in env.items():
        monkeypatch.setenv(name, val)
    return runpy.run_path(str(ROOT / "config" / "settings.py"))


def test_log_format_json_switches_the_console_to_json_lines(monkeypatch):
    text = _settings_with(monkeypatch, LOG_FORMAT="text")
    assert "formatter" not in text["LOGGING"]["handlers"]["console"]
    assert text["LOG_REQUESTS"] is False
    json_mode = _settings_with(monkeypatch, LOG_FORMAT="json")
    console = json_mode["LOGGING"]["handlers"]["console"]
    assert json_mode["LOGGING"]["formatters"][console["formatter"]]["()"] == (
        "config.jsonlog.JsonFormatter"
    )
    assert "request_id" in console["filters"] and json_mode["LOG_REQUESTS"] is True
    with pytest.raises(ImproperlyConfigured, match="LOG_FORMAT='xml'"):
        _settings_with(monkeypatch, LOG_FORMAT="xml")


RACE = """
import sys, threading
sys.path.insert(0, sys.argv[1])
sys.setswitchinterval(1e-6)  # switch threads as often as possible: the race shows every time
from lib import metrics
barrier = threading.Barrier(16)
made, errors = [], []
def first_request():
    barrier.wait()
    try:
        made.append(metrics._metrics())
    except Exception as error:
        errors.append(repr(error))
threads = [threading.Thread(target=first_request) for _ in range(16)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(errors), len({id(m) for m in made}))
"""


@pytest.mark.slow  # a fresh interpreter, whose metrics are not made yet
def test_the_first_requests_of_a_process_arriving_together_make_the_metrics_once():
    """A gthread worker's first sixteen requests at the same instant: each counts itself, and
    the registry refuses a second metric of a name; before the lock, 15 of them failed (500)."""
    out = subprocess.run(
        [sys.executable, "-c", RACE, str(ROOT)], capture_output=True, text=True, check=True
    )
    errors, distinct = map(int, out.stdout.split())
    assert (errors, distinct) == (0, 1), out.stdout
