"""The queue frontier: a volunteer far ahead of the others starts looking where they are.

In the study every volunteer labeled every issue (K = the number of volunteers), so the
fastest one had labeled thousands of issues that were still open, waiting for the others.
Scenarios: Ada runs ahead; Otto and Tia hold an issue full; reordering the queue. Each runs
with the PostgreSQL functions and with the Python path alone.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.utils import timezone

from labeling import queue, setup
from labeling.models import Annotation, ProjectIssue, QueueFrontier, Reservation
from tests.conftest import make_issue
from tests.labeling.conftest import label_item, take_and_label

# The queue, a submission or resolution: the labeling path matters, so each test runs on both.
pytestmark = pytest.mark.both_paths


@pytest.fixture(params=[True, False], ids=["pg-functions", "python-only"])
def path(request, settings):
    settings.DB_FUNCTIONS = request.param
    return request.param


@pytest.fixture
def queue_of_twelve(project, repository):
    project.annotations_per_issue = 3
    project.save()
    return [
        ProjectIssue.objects.create(project=project, issue=make_issue(repository, n), position=n)
        for n in range(12)
    ]


def _frontier(project, user) -> int | None:
    found = QueueFrontier.objects.filter(project=project, annotator=user).first()
    return None if found is None else found.position


def test_a_volunteer_far_ahead_starts_from_their_frontier(
    path, project, queue_of_twelve, annotator, other_annotator
):
    for n in range(10):
        take_and_label(annotator, project, "C.1")
        # Every open issue before the last one handed to Ada is one she labeled.
        assert _frontier(project, annotator) == n
    # Ten issues wait for two more labels each; Ada is handed the eleventh ...
    assert queue.next_issue_for(annotator, project) == queue_of_twelve[10]
    assert _frontier(project, annotator) == 10
    # ... and Otto, who has labeled nothing, still starts at the front.
    assert queue.next_issue_for(other_annotator, project) == queue_of_twelve[0]
    assert _frontier(project, other_annotator) == 0


def test_the_frontier_waits_at_a_full_issue_whose_slot_may_free(
    path, project, queue_of_twelve, annotator, other_annotator, third_annotator
):
    project.annotations_per_issue = 2
    project.save()
    first = queue_of_twelve[0]
    assert queue.next_issue_for(other_annotator, project) == first
    assert queue.next_issue_for(third_annotator, project) == first
    # The first issue is full: Ada is handed the second, and her frontier stays at the first.
    assert queue.next_issue_for(annotator, project) == queue_of_twelve[1]
    assert _frontier(project, annotator) == first.position
    label_item(annotator, project, queue_of_twelve[1], "C.1")
    # Tia hands her slot back: the first issue is Ada's next, not the third.
    assert queue.skip(third_annotator, first)
    assert queue.next_issue_for(annotator, project) == first


def test_an_issue_handed_back_comes_back_from_behind_the_frontier(
    path, project, queue_of_twelve, annotator
):
    project.annotations_per_issue = 1
    project.save()
    first = queue.next_issue_for(annotator, project)
    assert queue.skip(annotator, first)
    for item in queue_of_twelve[1:]:
        assert queue.next_issue_for(annotator, project) == item
        label_item(annotator, project, item, "A.1")
    assert _frontier(project, annotator) == queue_of_twelve[-1].position
    # Nothing else is left: the handed-back issue comes back although it lies behind.
    assert queue.next_issue_for(annotator, project) == first


def test_ordering_the_queue_again_starts_everyone_from_the_front(
    project, queue_of_twelve, annotator
):
    for _ in range(4):
        take_and_label(annotator, project, "C.1")
    assert _frontier(project, annotator) == 3
    setup.order_queue(project, pilot_size=2, seed=9)
    assert not QueueFrontier.objects.filter(project=project).exists()
    labeled = set(Annotation.objects.filter(annotator=annotator).values_list("issue_id", flat=True))
    got = queue.next_issue_for(annotator, project)
    unlabeled = ProjectIssue.objects.filter(project=project).exclude(issue_id__in=labeled)
    assert got == unlabeled.order_by("position", "id").first()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's plan")
def test_the_candidate_scan_starts_at_the_frontier_in_the_index(
    project, queue_of_twelve, annotator
):
    for _ in range(6):
        take_and_label(annotator, project, "C.1")
    params = {**queue._params(annotator, project, False)}
    with connection.cursor() as cursor:
        cursor.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + queue._CANDIDATES_SQL,
            params,
        )
        plan = cursor.fetchone()[0][0]["Plan"]
    scans = []

    def walk(node):
        if node.get("Relation Name") == "annotator_projectissue":
            scans.append(node)
        for child in node.get("Plans", []):
            walk(child)

    walk(plan)
    # Of the six issues Ada labeled, only the last is read (her frontier is the last issue she
    # was handed): the index range starts there.
    assert scans and all("position" in scan.get("Index Cond", "") for scan in scans)
    assert sum(scan.get("Rows Removed by Filter", 0) for scan in scans) == 1


def test_a_handed_back_issue_taken_again_and_abandoned_comes_back_in_order(
    path, project, queue_of_twelve, annotator, other_annotator
):
    project.annotations_per_issue = 1
    project.save()
    first, second, third, fourth = queue_of_twelve[:4]
    ProjectIssue.objects.filter(project=project, position__gt=3).delete()
    assert queue.next_issue_for(annotator, project) == first
    assert queue.skip(annotator, first)
    for item in (second, third):
        assert queue.next_issue_for(annotator, project) == item
        label_item(annotator, project, item, "A.1")
    Reservation.objects.create(  # Otto holds the fourth: full (K = 1)
        project_issue=fourth,
        annotator=other_annotator,
        expires_at=timezone.now() + timedelta(minutes=30),
    )
    # Nothing else for Ada: the handed-back issue comes back, from behind her frontier ...
    assert queue.next_issue_for(annotator, project) == first
    assert _frontier(project, annotator) == first.position
    # ... and she leaves it. Once both reservations have expired, it comes first again.
    with time_machine.travel(timezone.now() + timedelta(minutes=31)):
        assert queue.next_issue_for(annotator, project) == first
