"""Scenario: an annotator steps back through their own labels, one issue at a time."""

import pytest
from django.urls import reverse

from labeling.submission import previous_item_id
from tests.labeling.conftest import label_item

pytestmark = pytest.mark.django_db


def test_previous_walks_back_through_own_labels_only(project, items, annotator, other_annotator):
    for n in (0, 2, 1):
        label_item(annotator, project, items[n], "A.1")
    # Another annotator's later label is not a step of annotator's way back.
    label_item(other_annotator, project, items[3], "A.1")

    assert previous_item_id(annotator, project, items[5].pk) == items[1].pk  # not labeled yet
    assert previous_item_id(annotator, project, items[1].pk) == items[2].pk
    assert previous_item_id(annotator, project, items[2].pk) == items[0].pk
    assert previous_item_id(annotator, project, items[0].pk) is None
    assert previous_item_id(other_annotator, project, items[5].pk) == items[3].pk


def test_the_previous_link_redirects_to_the_own_last_issue(client, project, items, annotator):
    client.force_login(annotator)
    url = reverse("label_previous", args=[project.pk])
    first = client.get(url, {"from": items[4].public_id})
    # Nothing labeled yet: back to the issue the annotator came from.
    assert first["Location"] == reverse("label_issue", args=[project.pk, items[4].public_id])
    label_item(annotator, project, items[0], "A.1")
    response = client.get(url, {"from": items[4].public_id})
    assert response["Location"] == reverse("label_issue", args=[project.pk, items[0].public_id])
    assert client.get(url, {"from": "²"}).status_code == 302  # a bad id is no id


def test_outsiders_and_researchers_cannot_step_back(client, project, items, researcher, outsider):
    for user in (researcher, outsider):
        client.force_login(user)
        assert client.get(reverse("label_previous", args=[project.pk])).status_code == 404
