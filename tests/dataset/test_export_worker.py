"""An export queued from the page runs in a real `celery worker` process and can be downloaded.

The worker uses the test database from its own process, so this test commits
(`transaction=True`) and restores the migrations' data afterwards (`serialized_rollback`).
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.db import connection
from django.urls import reverse

from dataset.models import ExportJob

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def worker():
    assert settings.REDIS_URL, "worker tests need Redis (bin/test sets REDIS_URL)"
    redis.Redis.from_url(settings.REDIS_URL).flushdb()  # this run's own Redis db
    s = connection.settings_dict
    url = f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    env = {**os.environ, "DATABASE_URL": url, "REDIS_URL": settings.REDIS_URL}
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-P", "solo",
         "--without-heartbeat", "--without-gossip", "--without-mingle", "-l", "warning"],
        cwd=ROOT, env=env, start_new_session=True,
    )  # fmt: skip
    yield proc
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_export_runs_in_a_worker_and_downloads(client, project, issues_in_project, lead, worker):
    client.force_login(lead)
    # None of the issues is final yet: the lead asks for every issue.
    response = client.post(reverse("exports", args=[project.pk]), {"everything": "on"})
    assert response.status_code == 302
    job = ExportJob.objects.get()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in ("done", "failed"):
            break
        time.sleep(0.2)
    assert job.status == "done", job.error or job.status
    page = client.get(reverse("exports", args=[project.pk])).content.decode()
    assert reverse("export_download", args=[project.pk, job.pk]) in page
    download = client.get(reverse("export_download", args=[project.pk, job.pk]))
    data = b"".join(download.streaming_content)
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert "manifest.json" in names and "labels/Megatron-LM.csv" in names
