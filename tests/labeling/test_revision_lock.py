"""Labels lock when the K-th arrives: an annotator cannot probe the others' labels by revising.

The attack this guards against (K = 2): Ada labels A.1, Otto labels C.1, the issue waits for
the lead. Otto then tries B.1, "not LLM-related", then A.1: before the lock, the third try
turned the issue final as unanimous, telling Otto Ada's label and taking the issue out of the
lead's queue. Now every try is refused the same way, nothing moves, and the lead resolves it.
"""

import pytest
from django.urls import reverse

from labeling.models import Annotation, DiscussionMessage, ProjectIssue, Resolution
from tests.labeling.conftest import label_data

# The queue, a submission or resolution: the labeling path matters, so each test runs on both.
pytestmark = pytest.mark.both_paths

PROBES = ("B.1", "FP", "A.1")


def _label_via_http(client, project, code, **extra):
    url = client.get(reverse("label_next", args=[project.pk])).url
    response = client.post(url, label_data(project, code, **extra))
    assert response.status_code == 302, response.content[:300]
    return url


@pytest.fixture
def k2(project):
    project.annotations_per_issue = 2
    project.save()
    return project


@pytest.fixture
def disputed(client, k2, items, annotator, other_annotator):
    """Ada labeled A.1 and Otto C.1 over HTTP: the issue is in the lead's queue."""
    client.force_login(annotator)
    url = _label_via_http(client, k2, "A.1")
    client.force_login(other_annotator)
    assert _label_via_http(client, k2, "C.1") == url
    item = ProjectIssue.objects.get(project=k2, annotation_count=2)
    assert item.status == ProjectIssue.Status.DISAGREEMENT
    return item, url


def _what_otto_sees(client, project, item, url):
    issue = client.get(reverse("api_issues", args=[project.pk])).json()["results"]
    mine = client.get(reverse("api_annotations", args=[project.pk])).json()["results"]
    return (
        [i for i in issue if i["url"] == item.issue.url],
        [(a["code"], a["revision"], a["is_current"]) for a in mine],
        client.get(reverse("my_progress", args=[project.pk])).status_code,
    )


def test_revisions_after_k_change_nothing_and_the_lead_still_resolves(
    client, k2, disputed, other_annotator, lead
):
    item, url = disputed
    client.force_login(other_annotator)
    seen_before = _what_otto_sees(client, k2, item, url)
    assert seen_before[0][0]["status"] == "open" and seen_before[0][0]["final"] is None
    refusals = []
    for code in PROBES:
        response = client.post(url, label_data(k2, code))
        assert response.status_code == 400
        assert b"Your label is locked" in response.content
        refusals.append(response.content.replace(code.encode(), b""))
        item.refresh_from_db()
        assert item.status == ProjectIssue.Status.DISAGREEMENT
        assert not Resolution.objects.filter(project=k2).exists()
        assert _what_otto_sees(client, k2, item, url) == seen_before
    # Otto's stored label never moved: one revision, C.1.
    otto = Annotation.objects.get(annotator=other_annotator)
    assert (otto.label_code, otto.revision) == ("C.1", 1)

    # The lead still has it in the queue and resolves it.
    client.force_login(lead)
    queue = client.get(reverse("disagreement_queue", args=[k2.pk])).content.decode()
    assert f'data-item="{item.pk}"' in queue
    resolve = reverse("resolve_issue", args=[k2.pk, item.pk])
    ada = Annotation.objects.get(annotator__username="ada-annotator")
    response = client.post(
        resolve, {"action": "resolve", "source": str(ada.pk), "method": "lead_decision"}
    )
    assert response.status_code == 302
    final = Resolution.objects.get(project=k2, is_current=True)
    assert final.label_code == "A.1" and final.method == "lead_decision"
    # The resolution names the exact revisions it was decided on.
    assert sorted(final.based_on) == sorted([ada.pk, otto.pk])


def test_a_locked_label_is_shown_with_a_change_request_form(client, k2, disputed, other_annotator):
    _, url = disputed
    client.force_login(other_annotator)
    body = client.get(url).content.decode()
    assert 'id="locked-label"' in body and 'id="label-form"' not in body
    assert "disagreement" not in body.lower()


def test_a_change_request_reaches_the_lead_and_changes_nothing(
    client, k2, disputed, other_annotator, annotator, lead
):
    item, url = disputed
    client.force_login(other_annotator)
    request_url = reverse("request_change", args=[k2.pk, item.public_id])
    response = client.post(request_url, {"body": "I meant B.1: it is a deployment question"})
    assert response.status_code == 302
    item.refresh_from_db()
    assert item.status == ProjectIssue.Status.DISAGREEMENT
    message = DiscussionMessage.objects.get(project_issue=item)
    assert message.is_change_request and message.author == other_annotator
    # Otto sees his own request; Ada sees none of it.
    assert "I meant B.1" in client.get(url).content.decode()
    client.force_login(annotator)
    assert "I meant B.1" not in client.get(url).content.decode()
    # The lead sees it in the queue and on the resolve page.
    client.force_login(lead)
    queue = client.get(reverse("disagreement_queue", args=[k2.pk])).content.decode()
    assert "1 change request" in queue
    resolve = client.get(reverse("resolve_issue", args=[k2.pk, item.pk])).content.decode()
    assert "I meant B.1" in resolve and "change request" in resolve


def test_a_late_change_request_on_a_final_issue_is_listed_for_the_lead(
    client, k2, items, annotator, other_annotator, lead
):
    client.force_login(annotator)
    url = _label_via_http(client, k2, "C.1")
    client.force_login(other_annotator)
    _label_via_http(client, k2, "C.1")
    item = ProjectIssue.objects.get(project=k2, annotation_count=2)
    assert item.status == ProjectIssue.Status.FINAL
    # A revision of a final issue is refused too.
    assert client.post(url, label_data(k2, "C.2")).status_code == 400
    change_url = reverse("request_change", args=[k2.pk, item.public_id])
    client.post(change_url, {"body": "C.2 fits better"})
    client.force_login(lead)
    queue = client.get(reverse("disagreement_queue", args=[k2.pk])).content.decode()
    assert 'id="late-change-requests"' in queue and "C.2 fits better" in queue


def test_someone_without_a_label_cannot_ask_for_a_change(client, k2, disputed, third_annotator):
    item, _ = disputed
    client.force_login(third_annotator)
    response = client.post(reverse("request_change", args=[k2.pk, item.public_id]), {"body": "x"})
    assert response.status_code == 404
    assert not DiscussionMessage.objects.exists()


def test_before_k_a_revision_is_still_taken(client, project, items, annotator):
    # K = 3 (the fixture's default is checked, not assumed).
    assert project.annotations_per_issue > 1
    client.force_login(annotator)
    url = _label_via_http(client, project, "A.1")
    assert client.post(url, label_data(project, "B.1")).status_code == 302
    current = Annotation.objects.get(annotator=annotator, is_current=True)
    assert (current.label_code, current.revision) == ("B.1", 2)


def test_the_same_label_sent_twice_after_k_is_not_an_error(client, k2, disputed, other_annotator):
    _, url = disputed
    client.force_login(other_annotator)
    # A double submit of the K-th label: the same answer whatever the others chose.
    assert client.post(url, label_data(k2, "C.1")).status_code == 302
    assert Annotation.objects.filter(annotator=other_annotator).count() == 1
