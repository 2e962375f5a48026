"""What labeling tells Prometheus: labels stored (on both labeling paths) and the queue's depth
per project, read from /metrics as Prometheus would.

Ada and Otto annotate the pilot project (K = 2); a second project has nothing waiting.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.models import Project
from labeling import submission
from labeling.models import ProjectIssue
from tests.builders import final_issue, label_data, label_item
from tests.labeling.conftest import take_and_label
from tests.metrics_helpers import samples, value

pytestmark = pytest.mark.both_paths
LABELS = "annotator_labels_submitted_total"
QUEUE = "annotator_queue_issues"


def scraped(client) -> str:
    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.django_db
def test_a_stored_label_is_counted_once_and_a_refused_one_not_at_all(
    client, project, issues_in_project, annotator, django_capture_on_commit_callbacks
):
    mine = {"project": str(project.pk), "kind": "first"}
    revised = {"project": str(project.pk), "kind": "revision"}
    before = scraped(client)
    with django_capture_on_commit_callbacks(execute=True):
        annotation = take_and_label(annotator, project, "C.3")
        take_and_label(annotator, project, "B.1")
    after = scraped(client)
    assert value(after, LABELS, **mine) - value(before, LABELS, **mine) == 2
    item = ProjectIssue.objects.get(project=project, issue_id=annotation.issue_id)
    with django_capture_on_commit_callbacks(execute=True):
        # A double submit stores nothing; a changed label is a revision.
        label_item(annotator, project, item, "C.3")
        label_item(annotator, project, item, "C.2")
        # A refused label (an issue never handed out) is not counted.
        with pytest.raises(submission.NotYours):
            submission.submit(
                annotator,
                project,
                issues_in_project_item(project, 5),
                submission.parse_label(project, label_data(project, "C.3")),
            )
    last = scraped(client)
    assert value(last, LABELS, **mine) == value(after, LABELS, **mine)
    assert value(last, LABELS, **revised) - value(after, LABELS, **revised) == 1


def issues_in_project_item(project: Project, position: int) -> ProjectIssue:
    return ProjectIssue.objects.get(project=project, position=position)


@pytest.mark.django_db
def test_a_label_sent_through_the_page_is_counted(
    client, project, issues_in_project, annotator, django_capture_on_commit_callbacks
):
    mine = {"project": str(project.pk), "kind": "first"}
    before = scraped(client)
    client.force_login(annotator)
    page = client.get(reverse("label_next", args=[project.pk]), follow=True)
    assert page.status_code == 200
    url = page.redirect_chain[-1][0]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, label_data(project, "C.3"))
    assert response.status_code == 302, response.content[:500]
    assert value(scraped(client), LABELS, **mine) - value(before, LABELS, **mine) == 1


@pytest.mark.django_db
def test_queue_depth_per_project(
    client, project, issues_in_project, annotator, other_annotator, taxonomy_version
):
    project.annotations_per_issue = 2
    project.save()
    items = list(ProjectIssue.objects.filter(project=project).order_by("position"))
    final_issue(project, items[0], "C.3", "C.3")  # agreed: final
    label_item(annotator, project, items[1], "C.2")  # disagree: the lead's queue
    label_item(other_annotator, project, items[1], "C.1")
    label_item(annotator, project, items[2], "C.2")  # one label of two: still open
    quiet = Project.objects.create(name="Nothing waits", taxonomy_version=taxonomy_version)
    text = scraped(client)
    # Six issues: one final, one disputed, four needing labels; the other project is empty.
    assert value(text, QUEUE, project=str(project.pk), status="open") == 4
    assert value(text, QUEUE, project=str(project.pk), status="disagreement") == 1
    # An empty queue is a series at zero, not a missing one.
    assert (QUEUE, frozenset({"project": str(quiet.pk), "status": "open"}.items())) in samples(text)
    assert value(text, QUEUE, project=str(quiet.pk), status="open") == 0
    assert value(text, QUEUE, project=str(quiet.pk), status="disagreement") == 0
