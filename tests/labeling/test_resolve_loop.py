"""Scenario: a lead's "Record and next" follows the disagreement queue's order and filters."""

import pytest
from django.urls import reverse

from labeling.models import Resolution
from tests.labeling.conftest import label_item, node

pytestmark = pytest.mark.django_db


@pytest.fixture
def disputes(project, items, annotator, other_annotator, third_annotator):
    """items[0] and items[2] disagree at the type, items[1] at the theme (same type C)."""
    plans = {0: ("A.1", "C.1", "C.1"), 1: ("C.1", "C.2", "C.2"), 2: ("B.1", "C.3", "C.3")}
    for n, codes in plans.items():
        for user, code in zip((annotator, other_annotator, third_annotator), codes, strict=True):
            label_item(user, project, items[n], code)
    return items


def _record_and_next(client, project, item, query: str = ""):
    url = reverse("resolve_issue", args=[project.pk, item.pk]) + (f"?{query}" if query else "")
    data = {"action": "resolve", "source": "new", "method": "lead_decision", "then": "next"}
    data.update(issue_type=node(project, "C").pk, theme=node(project, "C.1").pk)
    return client.post(url, data)


def test_record_and_next_keeps_the_level_filter(client, project, disputes, lead):
    client.force_login(lead)
    query = "level=type&sort=position"
    response = _record_and_next(client, project, disputes[0], query)
    # items[1] disagrees at the theme, so the next one under level=type is items[2].
    assert response["Location"] == (
        reverse("resolve_issue", args=[project.pk, disputes[2].pk]) + "?" + query
    )
    page = client.get(response["Location"]).content.decode()
    assert "1 disagreement left with these filters" in page
    last = _record_and_next(client, project, disputes[2], query)
    assert last["Location"] == reverse("disagreement_queue", args=[project.pk]) + "?" + query
    assert Resolution.objects.filter(project=project, is_current=True).count() == 2


def test_record_stays_and_bad_filters_are_ignored(client, project, disputes, lead):
    client.force_login(lead)
    url = reverse("resolve_issue", args=[project.pk, disputes[1].pk])
    data = {"action": "resolve", "source": "new", "method": "lead_decision", "then": "stay"}
    data.update(issue_type=node(project, "C").pk, theme=node(project, "C.2").pk)
    response = client.post(url + "?level=nonsense&repository=²&sort=drop", data)
    assert response.status_code == 302 and response["Location"] == url
    assert client.get(url + "?level=bogus&type=x").status_code == 200
