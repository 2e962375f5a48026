"""An export queued from the page runs in a real `celery worker` process and can be downloaded.

The worker uses the test database from its own process, so this test commits
(`transaction=True`) and restores the migrations' data afterwards (`serialized_rollback`).
"""

from __future__ import annotations

import io
import time
import zipfile

import pytest
import redis
from django.conf import settings
from django.urls import reverse

from dataset.models import ExportJob
from tests.faults.services import celery_worker, database_url, stop_process

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def worker():
    assert settings.REDIS_URL, "worker tests need Redis (bin/test sets REDIS_URL)"
    redis.Redis.from_url(settings.REDIS_URL).flushdb()  # this run's own Redis db
    proc = celery_worker({"DATABASE_URL": database_url(), "REDIS_URL": settings.REDIS_URL})
    yield proc
    stop_process(proc)


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
