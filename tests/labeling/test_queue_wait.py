"""When every candidate is locked by another annotator for a moment, the queue waits for those
row locks (bounded by lock_timeout) instead of sleeping in the request, and still hands out the
issue once the lock is gone.
"""

import threading
import time

import pytest
from django.db import connection, connections, transaction

from labeling import queue
from labeling.models import ProjectIssue, Reservation

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.one_path]


def _hold_row_lock(item_id: int, held: threading.Event, seconds: float) -> None:
    """Another annotator's transaction holding the issue's row lock, then letting go."""
    try:
        with transaction.atomic():
            ProjectIssue.objects.select_for_update().get(pk=item_id)
            held.set()
            time.sleep(seconds)  # the other party's work, in its own thread
    finally:
        connections.close_all()


@pytest.mark.parametrize("functions", [True, False], ids=["pg-functions", "python-only"])
def test_a_locked_only_candidate_is_waited_for_not_skipped(
    project, repository, annotator, settings, functions
):
    assert connection.vendor == "postgresql"
    settings.DB_FUNCTIONS = functions
    from tests.conftest import make_issue

    item = ProjectIssue.objects.create(project=project, issue=make_issue(repository, 7), position=0)
    held = threading.Event()
    holder = threading.Thread(target=_hold_row_lock, args=(item.pk, held, 0.15))
    holder.start()
    assert held.wait(5)
    started = time.monotonic()
    got = queue.next_issue_id_for(annotator, project)
    waited = time.monotonic() - started
    holder.join()
    # The only issue was locked when asked: skipping it would have answered "nothing left".
    assert got == item.pk
    assert Reservation.objects.filter(project_issue=item, annotator=annotator).exists()
    # It waited for the lock to go (~0.15 s), bounded by the lock timeout of each round.
    assert 0.05 < waited < 5


def test_a_lock_held_past_every_round_gives_none_within_the_bound(
    project, repository, annotator, settings
):
    from tests.conftest import make_issue

    item = ProjectIssue.objects.create(project=project, issue=make_issue(repository, 8), position=0)
    held = threading.Event()
    holder = threading.Thread(target=_hold_row_lock, args=(item.pk, held, 3.0))
    holder.start()
    assert held.wait(5)
    started = time.monotonic()
    got = queue.next_issue_id_for(annotator, project)
    waited = time.monotonic() - started
    holder.join()
    assert got is None
    # LOCKED_RETRIES rounds of at most LOCK_WAIT each (0.2 s), plus the rounds' own queries.
    assert waited < queue.LOCKED_RETRIES * 0.2 + 1.5
