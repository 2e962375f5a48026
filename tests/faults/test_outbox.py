"""The outbox without a live worker: a lead asks for an export while the broker refuses; the job
is recorded and waits; the sweep hands it over once the broker takes tasks again, and hands
over again a task the broker lost. (The real thing, with Redis killed: test_redis_stop.py.)"""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.urls import reverse
from django.utils import timezone
from kombu.exceptions import OperationalError

from annotator import outbox
from annotator.models import QueuedTask
from dataset.exports import start_export
from dataset.models import ExportJob


class Broker:
    """`send_task` that refuses while `down`, and records what it took."""

    def __init__(self) -> None:
        self.down = False
        self.sent: list[tuple[str, list, dict]] = []

    def send_task(self, name, args=None, kwargs=None, **options):
        if self.down:
            raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        self.sent.append((name, list(args or ()), options))


@pytest.fixture
def broker(monkeypatch, settings) -> Broker:
    settings.CELERY_TASK_ALWAYS_EAGER = False
    fake = Broker()
    monkeypatch.setattr(outbox.celery_app(), "send_task", fake.send_task)
    return fake


def _age(row: QueuedTask, **ago) -> None:
    QueuedTask.objects.filter(pk=row.pk).update(created_at=timezone.now() - timedelta(**ago))


def test_an_export_asked_for_while_the_broker_is_away_waits_and_goes_when_it_returns(
    broker, project, lead, client, django_capture_on_commit_callbacks
):
    broker.down = True
    client.force_login(lead)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("exports", args=[project.pk]))
    assert response.status_code == 302  # the page answers as usual
    job = ExportJob.objects.get()
    row = QueuedTask.objects.get()
    assert (row.task, row.args, row.published_at) == ("dataset.tasks.run_export", [job.pk], None)
    assert "Connection refused" in row.last_error and row.attempts == 1
    page = client.get(reverse("exports", args=[project.pk])).content.decode()
    assert "waiting for a worker" in page

    assert outbox.sweep() == 0  # within its grace the request's own publisher has it
    _age(row, seconds=5)
    assert outbox.sweep() == 0  # still away: kept
    assert broker.sent == []

    broker.down = False
    assert outbox.sweep() == 1
    [(name, args, options)] = broker.sent
    assert (name, args, options["headers"]) == ("dataset.tasks.run_export", [job.pk], {
        "outbox_id": row.pk
    })  # fmt: skip
    row.refresh_from_db()
    assert row.published_at is not None
    assert outbox.sweep() == 0  # handed over: not again while it may still be queued


def test_a_task_the_broker_lost_is_handed_over_again_but_not_one_waiting_for_its_time(
    broker, project, lead, settings, django_capture_on_commit_callbacks
):
    settings.OUTBOX_REPUBLISH_SECONDS = 60
    with django_capture_on_commit_callbacks(execute=True):
        start_export(project, lead)
    row = QueuedTask.objects.get()
    assert row.published_at is not None and len(broker.sent) == 1
    later = QueuedTask.objects.create(
        task="ingest.tasks.sync_part", args=[1, "c"], eta=timezone.now() + timedelta(hours=1)
    )
    long_ago = timezone.now() - timedelta(minutes=5)
    QueuedTask.objects.update(published_at=long_ago, created_at=long_ago)

    assert outbox.sweep() == 1  # the export's task, never started: lost with the broker
    assert [name for name, _, _ in broker.sent] == ["dataset.tasks.run_export"] * 2
    later.refresh_from_db()
    assert later.published_at == long_ago  # its eta is ahead: still waiting in the queue


def test_the_worker_that_starts_a_task_deletes_its_row(broker, project, lead):
    row = QueuedTask.objects.create(task="dataset.tasks.run_export", args=[1])
    other = QueuedTask.objects.create(task="dataset.tasks.run_export", args=[2])
    outbox._started(task=SimpleNamespace(request=SimpleNamespace(outbox_id=row.pk)))
    outbox._started(task=SimpleNamespace(request=SimpleNamespace()))  # a task from elsewhere
    assert list(QueuedTask.objects.values_list("pk", flat=True)) == [other.pk]
