"""A request's id in a real `celery worker`'s JSON log lines, and the worker's own metrics port.

The lead asks for an export with `X-Request-ID: lead-export-0001` (as a reverse proxy would
send it); the export task runs in a worker process started with `LOG_FORMAT=json`, prometheus
multiprocess mode and `WORKER_METRICS_PORT`. Its log lines about the task carry the request's
id, and its port reports the task's outcome, to a client with the token only (loopback is not
on that worker's allowlist).

The worker uses the test database from its own process, so this test commits
(`transaction=True`) and restores the migrations' data afterwards (`serialized_rollback`).
"""

from __future__ import annotations

import json
import subprocess

import pytest
import redis
import requests
from django.conf import settings
from django.urls import reverse

from dataset.models import ExportJob
from tests.faults.services import celery_worker, database_url, free_port, stop_process, wait_for
from tests.metrics_helpers import value

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
TOKEN = "worker-scrape-token-5e2d"
REQUEST_ID = "lead-export-0001"


@pytest.fixture
def worker(tmp_path):
    assert settings.REDIS_URL, "worker tests need Redis (bin/test sets REDIS_URL)"
    redis.Redis.from_url(settings.REDIS_URL).flushdb()  # this run's own Redis db
    (tmp_path / "prometheus").mkdir()
    port = free_port()
    env = {
        "DATABASE_URL": database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "LOG_FORMAT": "json",
        "LOG_LEVEL": "INFO",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prometheus"),
        "WORKER_METRICS_PORT": str(port),
        "METRICS_ALLOWED_IPS": "192.0.2.1/32",  # not loopback: only the token lets us in
        "METRICS_TOKEN": TOKEN,
    }
    log_path = tmp_path / "worker.log"
    with log_path.open("wb") as log_file:
        # The banner on stdout, the log lines on stderr (their level is LOG_LEVEL's: with
        # LOG_FORMAT=json the site's logging, not the worker's -l, sets them up).
        proc = celery_worker(env, stdout=subprocess.DEVNULL, stderr=log_file)
    yield proc, f"http://127.0.0.1:{port}/metrics", log_path
    stop_process(proc)


def _answers(url: str) -> bool:
    try:
        requests.get(url, timeout=1)
    except requests.ConnectionError:
        return False
    return True


def test_a_task_started_by_a_request_logs_the_requests_id(
    client, project, issues_in_project, lead, worker
):
    proc, metrics_url, log_path = worker
    wait_for(lambda: _answers(metrics_url) or proc.poll() is not None, 60, "the worker's port")
    assert proc.poll() is None, log_path.read_text()[-3000:]

    client.force_login(lead)
    response = client.post(
        reverse("exports", args=[project.pk]), {"everything": "on"}, HTTP_X_REQUEST_ID=REQUEST_ID
    )
    assert response.status_code == 302 and response["X-Request-ID"] == REQUEST_ID
    job = ExportJob.objects.get()
    finished = ("done", "failed")
    wait_for(lambda: ExportJob.objects.get(pk=job.pk).status in finished, 60, "the export")
    assert ExportJob.objects.get(pk=job.pk).status == "done"

    def task_lines() -> list[dict]:
        text = log_path.read_text()
        # As root (CI) Celery warns before logging is set up: every line from the first
        # record on is JSON.
        text = text[text.find("\n{") + 1 :]
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        return [line for line in lines if line.get("task") == "dataset.tasks.run_export"]

    wait_for(lambda: len(task_lines()) >= 2, 10, "the task's finishing log line")
    # Every line the worker logged is a JSON object (json.loads above would have failed).
    lines = task_lines()
    assert {line["request_id"] for line in lines} == {REQUEST_ID}
    assert lines[-1]["outcome"] == "success" and lines[-1]["duration"] > 0
    assert all({"timestamp", "level", "logger", "message"} <= set(line) for line in lines)

    # The worker's own metrics port: the token opens it, nothing else does.
    assert requests.get(metrics_url, timeout=5).status_code == 403
    wrong = requests.get(metrics_url, headers={"Authorization": "Bearer nope"}, timeout=5)
    assert wrong.status_code == 403
    scraped = requests.get(metrics_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5)
    assert scraped.status_code == 200
    labels = {"task": "dataset.tasks.run_export", "outcome": "success"}
    assert value(scraped.text, "annotator_celery_tasks_total", **labels) == 1
    assert value(scraped.text, "annotator_celery_task_duration_seconds_count", **labels) == 1
