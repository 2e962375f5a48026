"""The queue: who gets which issue next, reservations, skipping, expiry."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from labeling import queue, setup
from labeling.models import ProjectIssue, Reservation
from tests.labeling.conftest import label_item, take_and_label

# The queue, a submission or resolution: the labeling path matters, so each test runs on both.
pytestmark = pytest.mark.both_paths


def test_annotator_gets_issues_in_queue_order_with_the_pilot_first(project, items, annotator):
    setup.order_queue(project, pilot_size=2, seed=5)
    ordered = list(ProjectIssue.objects.filter(project=project).order_by("position"))
    assert [i.is_pilot for i in ordered] == [True, True, False, False, False, False]
    for expected in ordered:
        assert queue.next_issue_for(annotator, project) == expected
        take_and_label(annotator, project, "C.3")


def test_asking_again_returns_the_same_reserved_issue(project, items, annotator):
    first = queue.next_issue_for(annotator, project)
    assert queue.next_issue_for(annotator, project) == first
    assert Reservation.objects.filter(annotator=annotator).count() == 1


def test_nobody_gets_an_issue_they_labeled(project, items, annotator):
    seen = set()
    for _ in items:
        annotation = take_and_label(annotator, project, "A.1")
        assert annotation.issue_id not in seen
        seen.add(annotation.issue_id)
    assert queue.next_issue_for(annotator, project) is None


def test_an_issue_is_reserved_by_at_most_k_annotators(
    project, items, annotator, other_annotator, third_annotator, lead
):
    project.annotations_per_issue = 2
    project.save()
    got = [queue.next_issue_for(u, project) for u in (annotator, other_annotator, third_annotator)]
    assert got[0] == got[1] == items[0]
    assert got[2] == items[1]
    # Once both have labeled it, items[0] is full and nobody else is handed it.
    label_item(annotator, project, items[0], "C.1")
    label_item(other_annotator, project, items[0], "C.1")
    assert queue.next_issue_for(lead, project) == items[1]


def test_skip_hands_the_issue_back_and_moves_it_behind(project, items, annotator, other_annotator):
    project.annotations_per_issue = 1
    project.save()
    first = queue.next_issue_for(annotator, project)
    assert queue.skip(annotator, first)
    # The slot is free again for someone else ...
    assert queue.next_issue_for(other_annotator, project) == first
    # ... and the skipper gets another issue.
    assert queue.next_issue_for(annotator, project) == items[1]


def test_skipped_issues_come_back_when_nothing_else_is_left(project, items, annotator):
    for item in items[1:]:
        label_item(annotator, project, item, "B.1")
    assert queue.next_issue_for(annotator, project) == items[0]
    queue.skip(annotator, items[0])
    assert queue.next_issue_for(annotator, project) == items[0]


def test_skip_without_a_reservation_does_nothing(project, items, annotator):
    assert not queue.skip(annotator, items[0])


def test_an_abandoned_reservation_expires_and_the_issue_returns(
    project, items, annotator, other_annotator, settings
):
    settings.RESERVATION_MINUTES = 30
    project.annotations_per_issue = 1
    project.save()
    assert queue.next_issue_for(annotator, project) == items[0]
    with time_machine.travel(timezone.now() + timedelta(minutes=29), tick=False):
        assert queue.next_issue_for(other_annotator, project) == items[1]
    with time_machine.travel(timezone.now() + timedelta(minutes=31), tick=False):
        assert queue.active_reservation(annotator, project) is None
        # The other annotator still holds items[1] and now gets nothing new ...
        assert queue.next_issue_for(other_annotator, project) == items[1]
        queue.skip(other_annotator, items[1])
        # ... until they hand it back: then the abandoned items[0] is first in line.
        assert queue.next_issue_for(other_annotator, project) == items[0]


def test_final_and_disagreement_issues_are_not_handed_out(project, items, annotator):
    items[0].status = ProjectIssue.Status.FINAL
    items[0].save()
    items[1].status = ProjectIssue.Status.DISAGREEMENT
    items[1].save()
    assert queue.next_issue_for(annotator, project) == items[2]


def test_can_open_only_reserved_or_own_issues(project, items, annotator, other_annotator):
    item = queue.next_issue_for(annotator, project)
    assert queue.can_open(annotator, item)
    assert not queue.can_open(other_annotator, item)
    label_item(annotator, project, item, "C.2")
    assert queue.can_open(annotator, item)
    queue.next_issue_for(annotator, project)
    queue.skip(annotator, items[1])
    assert not queue.can_open(annotator, items[1])
