"""Scenario: Lena (lead) keeps the dashboard open (it polls every REFRESH_SECONDS) while Ada and
Otto label; the project-wide figures come from a snapshot (`labeling.dashboard`).

The project (K = 2) holds six issues:

    issue  Ada   Otto  status
    i0     C.1   C.1   final (unanimous)
    i1     C.2   C.3   final (Lena chose C.2)
    i2     A.1   B.1   disagreement (type)
    i3     C.1   -     open, in progress
    i4, i5             open

- The first render computes the figures and stores them; a render within the poll reads them
  from the snapshot (no query touches the annotations or the final labels) and composes them
  with what it reads live (reservations), and shows what a fresh computation shows.
- A stale snapshot is shown, "as of" its time, while exactly one refresh is queued, however
  many leads read it at once; the task refreshes it (a second delivery does nothing).
- With no worker, the reader computes the figures itself once the refresh is overdue; with no
  broker (tasks eager, the first look) at once.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotator import outbox
from annotator.models import Membership, Project, QueuedTask, Role
from config.celery import app
from labeling import dashboard, queue
from labeling.dashboard import Figures
from labeling.models import Annotation, DashboardSnapshot, ProjectIssue, Resolution
from tests.builders import final_issue, label_item
from tests.conftest import make_user

pytestmark = [pytest.mark.django_db, pytest.mark.one_path]

ANNOTATION_TABLE = Annotation._meta.db_table
RESOLUTION_TABLE = Resolution._meta.db_table


@pytest.fixture
def study(project, items, annotator, other_annotator, lead):
    ada, otto = annotator, other_annotator
    project.annotations_per_issue = 2
    project.save()
    final_issue(project, items[0], "C.1", "C.1")
    final_issue(project, items[1], "C.2", "C.3", final="C.2")
    label_item(ada, project, items[2], "A.1")
    label_item(otto, project, items[2], "B.1")
    label_item(ada, project, items[3], "C.1")
    statuses = [ProjectIssue.objects.get(pk=i.pk).status for i in items]
    assert statuses == ["final", "final", "disagreement", "open", "open", "open"]
    return project


def _labels(board, user) -> int:
    return next(row.labels for row in board.annotators if row.user_id == user.pk)


def _scans() -> dict[str, int]:
    """Scans of the annotations and the final labels in this transaction, as PostgreSQL counts
    them (every statement: the ORM's and `lib.sql`'s, which Django's query log does not see)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, coalesce(seq_scan, 0) + coalesce(idx_scan, 0)"
            " FROM pg_stat_xact_user_tables WHERE relname = ANY(%s)",
            [[ANNOTATION_TABLE, RESOLUTION_TABLE]],
        )
        return dict(cursor.fetchall())


@contextmanager
def _tables_read() -> Iterator[set[str]]:
    """The set, filled on leaving, of those two tables that the block read."""
    read: set[str] = set()
    before = _scans()
    yield read
    after = _scans()
    read.update(t for t, n in after.items() if n > before.get(t, 0))


def _age(project, seconds: float, **fields) -> None:
    """The snapshot as if computed `seconds` ago (and with `fields` written)."""
    DashboardSnapshot.objects.filter(project=project).update(
        computed_at=timezone.now() - timedelta(seconds=seconds), **fields
    )


def _refreshes(project):
    return QueuedTask.objects.filter(task=dashboard.REFRESH_TASK, args__0=project.pk)


def _stale() -> float:
    return dashboard.REFRESH_SECONDS + 5


# --- within the poll: the snapshot -----------------------------------------------------------


def test_the_first_render_computes_the_figures_and_stores_them(study, annotator):
    assert not DashboardSnapshot.objects.filter(project=study).exists()
    before = timezone.now()
    board = dashboard.dashboard(study)
    assert _labels(board, annotator) == 4
    snapshot = DashboardSnapshot.objects.get(project=study)
    assert before <= snapshot.computed_at <= timezone.now()
    assert board.figures_at == snapshot.computed_at and not board.refreshing
    assert snapshot.refresh_requested_at is None


def test_a_second_render_within_the_poll_reads_no_annotation_and_no_final_label(
    study, annotator, other_annotator
):
    with _tables_read() as read, CaptureQueriesContext(connection) as first:
        dashboard.dashboard(study)
    # The probe fires: computing the figures reads both tables.
    assert read == {ANNOTATION_TABLE, RESOLUTION_TABLE}

    # Otto labels i3 (now final) and Ada asks for her next issue.
    label_item(other_annotator, study, ProjectIssue.objects.get(project=study, position=3), "C.1")
    assert queue.next_item_for(annotator, study) is not None
    with _tables_read() as read, CaptureQueriesContext(connection) as second:
        board = dashboard.dashboard(study)
    assert read == set()
    assert len(second) < len(first)
    # The figures are the snapshot's (Otto's new label is not in them yet), the reservation
    # Ada holds is read live.
    assert _labels(board, other_annotator) == 3
    ada = next(row for row in board.annotators if row.user_id == annotator.pk)
    assert ada.open_reservations == 1


def test_the_snapshot_shows_what_a_fresh_computation_shows(study, lead):
    stored = dashboard.refresh_snapshot(study)
    # Its JSON, read back, is the figures it was made from.
    snapshot = DashboardSnapshot.objects.get(project=study)
    assert Figures.from_json(json.loads(json.dumps(snapshot.figures)), stored.computed_at) == (
        stored
    )

    def comparable(board):
        return dataclasses.replace(board, figures_at=None, refreshing=False)

    # At the present and at a later moment (the pace and the daily lines move with `now`).
    for now in (timezone.now(), timezone.now() + timedelta(days=3)):
        with _tables_read() as read:
            from_snapshot = dashboard.dashboard(study, now=now)
        assert read == set()  # it was read, not computed
        fresh = dashboard.dashboard(study, now=now, fresh=True)
        assert comparable(from_snapshot) == comparable(fresh)
    # Not an empty comparison: every part has figures.
    assert fresh.totals.final == 2 and fresh.totals.disagreement == 1
    assert ("type", "type", 1) in fresh.levels and any(n for _, n in fresh.types)
    assert fresh.charts[0].last == 7 and fresh.charts[1].last == 2


# --- a stale snapshot ------------------------------------------------------------------------


def test_a_stale_snapshot_is_shown_while_one_refresh_is_queued_and_the_task_refreshes_it(
    client, study, lead, annotator, other_annotator
):
    dashboard.dashboard(study)
    label_item(other_annotator, study, ProjectIssue.objects.get(project=study, position=3), "C.1")
    stale_at = (timezone.now() - timedelta(seconds=_stale())).replace(microsecond=0)
    DashboardSnapshot.objects.filter(project=study).update(computed_at=stale_at)

    # Lena's page polls three times before any worker runs: the same figures, "as of" their
    # time, a note that newer ones are coming, and one refresh asked for.
    client.force_login(lead)
    url = reverse("lead_dashboard", args=[study.pk])
    for _ in range(3):
        board = dashboard.dashboard(study)
        assert board.refreshing and board.figures_at == stale_at
        assert _labels(board, other_annotator) == 3
        page = client.get(url, HTTP_HX_REQUEST="true").content.decode()
        assert f'<time datetime="{timezone.localtime(stale_at).isoformat()}">' in page
        assert "Newer figures are being computed." in page
    [queued] = _refreshes(study)
    assert DashboardSnapshot.objects.get(project=study).refresh_requested_at is not None

    # The task, run as a worker runs it (by its name, the row dropped): new figures.
    outbox.run_here(queued.pk)
    snapshot = DashboardSnapshot.objects.get(project=study)
    assert snapshot.computed_at > stale_at and snapshot.refresh_requested_at is None
    board = dashboard.dashboard(study)
    assert _labels(board, other_annotator) == 4 and not board.refreshing
    assert "Newer figures are being computed." not in client.get(url).content.decode()
    assert not _refreshes(study).exists()
    # A second delivery of the task finds the figures fresh and computes nothing.
    assert dashboard.refresh_if_stale(study.pk) is False
    assert DashboardSnapshot.objects.get(project=study).computed_at == snapshot.computed_at


def test_refresh_now_asks_the_worker_for_figures_newer_than_a_poll(
    client, study, lead, other_annotator
):
    """Lena resolved an issue and presses "Refresh now" on figures 10 s old: fresh for a poll,
    not for her. The worker is asked (nothing is computed in her request), the page asks again
    every 2 s meanwhile, and the task computes although the figures are younger than a poll.
    Pressed again on figures 2 s old, nothing is asked."""
    dashboard.dashboard(study)
    label_item(other_annotator, study, ProjectIssue.objects.get(project=study, position=3), "C.1")
    _age(study, 10)
    client.force_login(lead)
    url = reverse("lead_dashboard", args=[study.pk])
    polled = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "Newer figures are being computed." not in polled  # the probe: a poll asks nothing
    assert 'hx-trigger="every 30s"' in polled and not _refreshes(study).exists()

    with _tables_read() as read:
        pressed = client.get(url + "?refresh=1", HTTP_HX_REQUEST="true").content.decode()
    assert "annotator_annotation" not in read  # not computed in her request
    assert "Newer figures are being computed." in pressed
    assert 'hx-trigger="every 2s"' in pressed
    [queued] = _refreshes(study)
    outbox.run_here(queued.pk)
    board = dashboard.dashboard(study)
    assert _labels(board, other_annotator) == 4 and not board.refreshing

    _age(study, 2)
    client.get(url + "?refresh=1", HTTP_HX_REQUEST="true")
    assert not _refreshes(study).exists()


def test_a_snapshot_stamped_by_a_clock_far_ahead_is_refreshed_not_kept(study, other_annotator):
    """A host whose clock ran a day ahead stored it: it is not fresh, and its refresh (by a
    right clock, so stamped earlier) replaces it."""
    dashboard.dashboard(study)
    label_item(other_annotator, study, ProjectIssue.objects.get(project=study, position=3), "C.1")
    _age(study, -86_400)
    assert dashboard.dashboard(study).refreshing
    [queued] = _refreshes(study)
    outbox.run_here(queued.pk)
    assert DashboardSnapshot.objects.get(project=study).computed_at <= timezone.now()
    assert _labels(dashboard.dashboard(study), other_annotator) == 4


def test_a_refresh_for_a_project_deleted_meanwhile_does_nothing(study):
    dashboard.dashboard(study)
    project_id = study.pk
    Project.objects.filter(pk=project_id).delete()
    assert not DashboardSnapshot.objects.filter(pk=project_id).exists()
    assert dashboard.refresh_if_stale(project_id) is False


def test_with_no_worker_the_reader_computes_the_figures_once_the_refresh_is_overdue(
    study, other_annotator
):
    dashboard.dashboard(study)
    label_item(other_annotator, study, ProjectIssue.objects.get(project=study, position=3), "C.1")
    overdue = dashboard.OVERDUE_INTERVALS * dashboard.REFRESH_SECONDS
    # Asked for a little under the limit ago: still on its way.
    asked = timezone.now() - timedelta(seconds=overdue - 5)
    _age(study, overdue + 10, refresh_requested_at=asked)
    board = dashboard.dashboard(study)
    assert board.refreshing and _labels(board, other_annotator) == 3
    assert DashboardSnapshot.objects.get(project=study).refresh_requested_at == asked
    assert not _refreshes(study).exists()  # nothing asked for again

    # Past the limit, never delivered: this reader computes and stores the figures.
    _age(study, overdue + 10, refresh_requested_at=timezone.now() - timedelta(seconds=overdue + 5))
    board = dashboard.dashboard(study)
    assert not board.refreshing and _labels(board, other_annotator) == 4
    snapshot = DashboardSnapshot.objects.get(project=study)
    assert snapshot.refresh_requested_at is None and snapshot.computed_at == board.figures_at
    assert timezone.now() - snapshot.computed_at < timedelta(seconds=dashboard.REFRESH_SECONDS)
    assert not _refreshes(study).exists()


def test_without_a_broker_a_stale_snapshot_is_computed_at_once(study, other_annotator, settings):
    """The first look (SQLite, no Redis) runs tasks eagerly: nobody would deliver a refresh."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    dashboard.dashboard(study)
    label_item(other_annotator, study, ProjectIssue.objects.get(project=study, position=3), "C.1")
    _age(study, _stale())
    board = dashboard.dashboard(study)
    assert not board.refreshing and _labels(board, other_annotator) == 4
    assert not _refreshes(study).exists()


def test_a_snapshot_of_another_format_is_computed_again(study, other_annotator):
    """A snapshot written by another release (an upgrade in progress) is not read."""
    dashboard.dashboard(study)
    label_item(other_annotator, study, ProjectIssue.objects.get(project=study, position=3), "C.1")
    DashboardSnapshot.objects.filter(project=study).update(figures={"format": 0})
    board = dashboard.dashboard(study)
    assert _labels(board, other_annotator) == 4
    assert DashboardSnapshot.objects.get(project=study).figures["format"] == (
        dashboard.FIGURES_FORMAT
    )


# --- several leads at once (threads, each on its own connection: commits) -------------------


@pytest.mark.django_db(transaction=True)
def test_several_leads_reading_a_stale_snapshot_at_once_queue_one_refresh(study, lead):
    leads = [lead] + [make_user(f"lead-{n}") for n in range(5)]
    for user in leads[1:]:
        Membership.objects.create(project=study, user=user, role=Role.LEAD)
    dashboard.dashboard(study)
    _age(study, _stale())
    start = threading.Barrier(len(leads))
    shown: list[bool] = []
    problems: list[BaseException] = []
    lock = threading.Lock()

    def poll() -> None:
        try:
            project = Project.objects.get(pk=study.pk)
            start.wait(timeout=10)
            board = dashboard.dashboard(project)
            with lock:
                shown.append(board.refreshing)
        except BaseException as exc:  # reported below, not lost in the thread
            problems.append(exc)
        finally:
            connection.close()

    try:
        threads = [threading.Thread(target=poll) for _ in leads]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert problems == []
        # Every lead saw the stale figures with newer ones on their way; one refresh was
        # asked for, and handed to the real broker.
        assert shown == [True] * len(leads)
        [queued] = _refreshes(study)
        assert queued.published_at is not None and queued.last_error == ""
    finally:
        app.control.purge()  # the message nobody will run: no worker here
