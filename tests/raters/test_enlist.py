"""Enlisting: Lena (the lead) lets a classifier count as one vote in the adaptive stopping rule
from a confidence on; a researcher, an annotator or an outsider cannot."""

from __future__ import annotations

import pytest
from django.urls import reverse

from raters.models import MachineRater

pytestmark = pytest.mark.django_db


@pytest.fixture
def rater(project) -> MachineRater:
    return MachineRater.objects.create(project=project, name="clf", kind="classifier")


def test_a_rater_starts_not_enlisted_and_the_lead_enlists_it(client, project, lead, rater):
    assert (rater.enlisted, rater.confidence_threshold) == (False, None)
    client.force_login(lead)
    page = client.get(reverse("raters_page", args=[project.pk]))
    assert reverse("rater_enlist", args=[project.pk, rater.pk]).encode() in page.content
    answer = client.post(
        reverse("rater_enlist", args=[project.pk, rater.pk]),
        {"enlisted": "on", "confidence_threshold": "0.8"},
    )
    assert answer.status_code == 302
    rater.refresh_from_db()
    assert (rater.enlisted, rater.confidence_threshold) == (True, 0.8)
    client.post(reverse("rater_enlist", args=[project.pk, rater.pk]), {"confidence_threshold": ""})
    rater.refresh_from_db()
    assert (rater.enlisted, rater.confidence_threshold) == (False, None)


@pytest.mark.parametrize(
    "data",
    [{"enlisted": "on"}, {"enlisted": "on", "confidence_threshold": "1.5"},
     {"enlisted": "on", "confidence_threshold": "x"}],
)  # fmt: skip
def test_enlisting_without_a_sound_threshold_is_a_400_naming_the_field(
    client, project, lead, rater, data
):
    client.force_login(lead)
    answer = client.post(reverse("rater_enlist", args=[project.pk, rater.pk]), data)
    assert answer.status_code == 400
    assert b"confidence_threshold" in answer.content
    rater.refresh_from_db()
    assert not rater.enlisted


@pytest.mark.parametrize("who", ["researcher", "annotator", "outsider"])
def test_only_a_lead_may_enlist(client, request, project, rater, who):
    client.force_login(request.getfixturevalue(who))
    answer = client.post(
        reverse("rater_enlist", args=[project.pk, rater.pk]),
        {"enlisted": "on", "confidence_threshold": "0.5"},
    )
    assert answer.status_code == 404
    rater.refresh_from_db()
    assert not rater.enlisted
