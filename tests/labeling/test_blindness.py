"""Blindness: until an issue is final an annotator sees only their own annotation.

Another annotator tries every labeling page and fragment on an issue someone else labeled:
no page, count or error may show the other annotation.
"""

import pytest
from django.urls import reverse

from labeling.models import ProjectIssue
from tests.labeling.conftest import label_data, label_item

SECRET = "ada-secret-summary"


@pytest.fixture
def labeled_by_ada(project, items, annotator):
    label_item(annotator, project, items[0], "C.3.i", summary=SECRET, note="ada-note",
               proposed_category="ada-proposal")  # fmt: skip
    return items[0]


def _pages(project, item):
    p, i, public = project.pk, item.pk, item.public_id
    return [
        ("get", reverse("label_next", args=[p]), {}),
        ("get", reverse("label_issue", args=[p, public]), {}),
        ("post", reverse("label_issue", args=[p, public]), {}),
        ("post", reverse("skip_issue", args=[p, public]), {}),
        ("get", reverse("my_progress", args=[p]), {}),
        ("get", reverse("project_detail", args=[p]), {}),
        ("get", reverse("disagreement_queue", args=[p]), {}),
        ("get", reverse("disagreement_queue", args=[p]), {"HTTP_HX_REQUEST": "true"}),
        ("get", reverse("resolve_issue", args=[p, i]), {}),
        ("post", reverse("resolve_issue", args=[p, i]), {}),
        ("get", reverse("project_setup", args=[p]), {}),
        ("get", "/", {}),
    ]


def _assert_blind(client, project, item, data):
    for method, url, extra in _pages(project, item):
        payload = data if method == "post" else {}
        response = getattr(client, method)(url, payload, follow=True, **extra)
        body = response.content.decode()
        # (Taxonomy codes are in every label form, so the summary and name are the tell.)
        for leak in (SECRET, "ada-note", "ada-proposal", "ada-annotator"):
            assert leak not in body, (url, method, leak)


def test_another_annotator_sees_nothing_of_an_open_issue(
    client, project, labeled_by_ada, other_annotator
):
    client.force_login(other_annotator)
    # The issue page itself is a 404 until it is handed to them ...
    url = reverse("label_issue", args=[project.pk, labeled_by_ada.public_id])
    assert client.get(url).status_code == 404
    # ... and once it is, it shows only their own (empty) form, no count of others.
    assert client.get(reverse("label_next", args=[project.pk])).url.endswith(
        f"/label/{labeled_by_ada.public_id}/"
    )
    body = client.get(url).content.decode()
    assert SECRET not in body and 'id="revision-note"' not in body and "1 of" not in body
    assert 'id="label-form"' in body
    _assert_blind(client, project, labeled_by_ada, label_data(project, "C.1"))


def test_blind_while_in_the_disagreement_queue(
    client, project, labeled_by_ada, other_annotator, third_annotator
):
    label_item(other_annotator, project, labeled_by_ada, "C.1")
    label_item(third_annotator, project, labeled_by_ada, "C.2")
    labeled_by_ada.refresh_from_db()
    assert labeled_by_ada.status == ProjectIssue.Status.DISAGREEMENT
    client.force_login(other_annotator)
    _assert_blind(client, project, labeled_by_ada, label_data(project, "C.4"))
    # Their own page of it shows their label only, and no status that hints at the others.
    body = client.get(reverse("label_issue", args=[project.pk, labeled_by_ada.public_id])).content
    assert b"disagreement" not in body.lower()


def test_after_final_the_final_label_is_shown(
    client, project, labeled_by_ada, other_annotator, third_annotator
):
    label_item(other_annotator, project, labeled_by_ada, "C.3.i")
    label_item(third_annotator, project, labeled_by_ada, "C.3.i")
    client.force_login(other_annotator)
    body = client.get(reverse("label_issue", args=[project.pk, labeled_by_ada.public_id])).content
    assert b"Final label" in body and SECRET.encode() not in body
