"""Redis stopped under a running site: labeling, resolving and pages go on (the cache is only
a cache, sessions live in the database); an export asked for meanwhile says "waiting for a
worker" and runs once Redis is back; an export queued just before Redis died (its message
lost with Redis, which keeps nothing on disk here) runs too, once. The outbox
(annotator.outbox) is what keeps both.

gunicorn and a Celery worker (with its beat) run on a redis-server of the test's own, which
the test kills by its id and starts again empty on the same port; the database is the test
database, which stays up.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore

from annotator.models import QueuedTask
from dataset.models import ExportJob
from labeling.models import Annotation, ProjectIssue, Resolution
from tests.builders import label_data, label_item
from tests.faults.services import (
    Gunicorn,
    PrivateRedis,
    celery_worker,
    database_url,
    stop_process,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
CSRF = "e" * 32


def _session(base: str, user) -> requests.Session:
    store = SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[-1]
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.create()
    session = requests.Session()
    session.cookies.set("sessionid", store.session_key)
    session.cookies.set("csrftoken", CSRF)
    session.headers.update({"X-CSRFToken": CSRF, "Referer": base + "/"})
    return session


@pytest.fixture
def site(tmp_path) -> Iterator[tuple[PrivateRedis, Gunicorn, dict[str, str]]]:
    redis = PrivateRedis()
    env = {
        "DATABASE_URL": database_url(),
        "REDIS_URL": redis.url,
        "SECRET_KEY": settings.SECRET_KEY,
        "CACHE_KEY_PREFIX": f"redis-stop-{time.time_ns()}",
        "DATA_DIR": str(tmp_path),
        "DEBUG": "0",
        "LOG_LEVEL": "ERROR",
        "OUTBOX_SWEEP_SECONDS": "1",
        "OUTBOX_REPUBLISH_SECONDS": "2",
    }
    server = None
    try:
        server = Gunicorn(env, workers=2)
        yield redis, server, env
    finally:
        if server is not None:
            server.close()
        redis.close()


def test_the_site_goes_on_without_redis_and_queued_jobs_run_when_it_returns(
    site, project, issues_in_project, lead, annotator, other_annotator
):
    redis, server, env = site
    base = server.base
    project.annotations_per_issue = 2
    project.save()
    items = list(ProjectIssue.objects.filter(project=project).order_by("position"))
    label_item(annotator, project, items[0], "C.1")
    label_item(other_annotator, project, items[0], "C.2")  # a disagreement for the lead
    ada, lena = _session(base, annotator), _session(base, lead)
    exports = f"{base}/projects/{project.pk}/exports/"

    # Redis up, no worker yet: export A goes to Redis and waits there.
    assert ada.get(f"{base}/projects/{project.pk}/", timeout=30).status_code == 200
    assert lena.post(exports, {}, allow_redirects=False, timeout=30).status_code == 302
    first = ExportJob.objects.get()
    assert QueuedTask.objects.get().published_at is not None

    redis.stop()  # SIGKILL: its queue (export A's message) is gone with it

    # Labeling goes on: the next issue, its page, the label stored.
    started = time.monotonic()
    next_issue = ada.get(f"{base}/projects/{project.pk}/label/", allow_redirects=False, timeout=30)
    assert next_issue.status_code == 302, next_issue.text[:500]
    item_url = base + next_issue.headers["Location"]
    assert ada.get(item_url, timeout=30).status_code == 200
    data = label_data(project, "C.3", summary="without redis")
    saved = ada.post(item_url, data, allow_redirects=False, timeout=30)
    assert saved.status_code == 302, saved.text[:500]
    assert Annotation.objects.filter(annotator=annotator, summary="without redis").count() == 1
    # Resolving goes on.
    resolve = f"{base}/projects/{project.pk}/resolve/{items[0].pk}/"
    assert lena.get(resolve, timeout=30).status_code == 200
    decided = lena.post(
        resolve,
        {"action": "resolve", "source": "new", "method": "lead_decision"}
        | label_data(project, "C.1"),
        allow_redirects=False,
        timeout=30,
    )
    assert decided.status_code == 302, decided.text[:500]
    assert Resolution.objects.filter(project=project, is_current=True).count() == 1
    # Pages go on, and a new session too (a person who logs in now).
    for path in ("", "dashboard/", "issues/", "my-progress/"):
        page = lena.get(f"{base}/projects/{project.pk}/{path}", timeout=30)
        assert page.status_code == 200, (path, page.status_code)
    assert requests.get(f"{base}/accounts/login/", timeout=30).status_code == 200
    # An export asked for now is recorded and waits for a worker; the page says so.
    asked = lena.post(exports, {}, allow_redirects=False, timeout=30)
    assert asked.status_code == 302, asked.text[:500]
    second = ExportJob.objects.exclude(pk=first.pk).get()
    waiting = QueuedTask.objects.get(args=[second.pk])
    assert waiting.published_at is None and waiting.last_error
    page = lena.get(exports, timeout=30).text
    assert page.count("waiting for a worker") == 2
    assert time.monotonic() - started < 30, "requests waited on the missing Redis"

    # A worker starts while Redis is still away, then Redis comes back (empty).
    directory = Path(tempfile.mkdtemp(prefix="faults-worker-"))
    # A worker with its beat, which sweeps the outbox every second here.
    with (directory / "worker.log").open("ab") as log:
        worker = celery_worker(
            env, beat_schedule=directory / "beat-schedule", stdout=log, stderr=subprocess.STDOUT
        )
    try:
        time.sleep(1)
        redis.start()

        def both_done() -> bool:
            assert worker.poll() is None, (directory / "worker.log").read_text()[-3000:]
            statuses = set(ExportJob.objects.values_list("status", flat=True))
            return statuses == {ExportJob.Status.DONE}

        wait_for(both_done, 90, "both exports to be built once Redis is back")
    finally:
        stop_process(worker)
    jobs = list(ExportJob.objects.order_by("pk"))
    root = Path(env["DATA_DIR"]) / "exports"
    files = sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())
    assert sorted(Path(j.file_path) for j in jobs) == files  # one file each, no other
    assert not QueuedTask.objects.exists()  # every task was started, none is left behind
