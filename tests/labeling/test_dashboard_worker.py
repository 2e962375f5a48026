"""Scenario: Lena (lead) polls the dashboard while Ada and Otto label; her page finds the
figures' snapshot stale and queues its refresh, which a real `celery worker` process runs (on
the test database and Redis); her next poll shows Otto's label.

The worker runs in its own process, so this test commits (`transaction=True`) and restores the
migrations' data afterwards (`serialized_rollback`).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from annotator.models import QueuedTask
from labeling import dashboard
from labeling.models import DashboardSnapshot
from tests.builders import label_item
from tests.faults.services import celery_worker, database_url, stop_process, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.one_path,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


@pytest.fixture
def worker(tmp_path) -> Iterator[tuple[subprocess.Popen, Path]]:
    assert settings.REDIS_URL, "worker tests need Redis (bin/test sets REDIS_URL)"
    redis.Redis.from_url(settings.REDIS_URL).flushdb()  # this run's own Redis db
    env = {"DATABASE_URL": database_url(), "REDIS_URL": settings.REDIS_URL}
    log_path = tmp_path / "worker.log"
    with log_path.open("wb") as log_file:
        proc = celery_worker(env, stdout=subprocess.DEVNULL, stderr=log_file)
    yield proc, log_path
    stop_process(proc, timeout=10)


def _computed_at(project):
    return DashboardSnapshot.objects.get(project=project).computed_at


def test_the_refresh_a_stale_page_queued_runs_in_a_worker(
    client, project, items, lead, annotator, other_annotator, worker
):
    proc, log_path = worker
    project.annotations_per_issue = 2
    project.save()
    label_item(annotator, project, items[0], "C.1")
    client.force_login(lead)
    url = reverse("lead_dashboard", args=[project.pk])
    assert client.get(url).status_code == 200  # the first render computes the figures

    label_item(other_annotator, project, items[0], "C.1")  # i0 is final now
    stale_at = timezone.now() - timedelta(seconds=dashboard.REFRESH_SECONDS + 5)
    DashboardSnapshot.objects.filter(project=project).update(computed_at=stale_at)
    page = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "Newer figures are being computed." in page
    [queued] = QueuedTask.objects.filter(task=dashboard.REFRESH_TASK, args__0=project.pk)
    assert queued.published_at is not None  # handed to Redis, for the worker

    def refreshed() -> bool:
        assert proc.poll() is None, log_path.read_text()[-3000:]
        return _computed_at(project) > stale_at

    wait_for(refreshed, 60, "the worker to refresh the snapshot")
    wait_for(lambda: not QueuedTask.objects.filter(pk=queued.pk).exists(), 10, "the row dropped")
    board = dashboard.dashboard(project)
    otto = next(row for row in board.annotators if row.user_id == other_annotator.pk)
    assert otto.labels == 1 and board.totals.final == 1 and not board.refreshing
    assert board.figures_at == _computed_at(project)
