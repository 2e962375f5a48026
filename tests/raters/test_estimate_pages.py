"""The estimates page and API: Rita (a researcher) and Lena (the lead) read each code's share
with the rater's help beside the human-only one; Ada (an annotator) and Oscar (an outsider)
get 404; a bad query is a 400 naming its field."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import MachineRater
from tests.builders import final_issue
from tests.raters.test_estimates import HUMAN, queue  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def sampled(project, queue):  # noqa: F811
    items, rater = queue
    for item, code in zip(items[: len(HUMAN)], HUMAN, strict=True):
        final_issue(project, item, code, code)
    return rater


def test_a_researcher_reads_the_estimates_the_api_gives(client, project, researcher, sampled):
    client.force_login(researcher)
    query = {"rater": sampled.pk, "level": "type", "plan": "0.1"}
    api = client.get(reverse("api_estimates", args=[project.pk]), query)
    assert api.status_code == 200
    report = api.json()
    assert report["n_human"] == len(HUMAN) and report["rater"] == sampled.name
    page = client.get(reverse("estimates_page", args=[project.pk]), query)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="estimate-result"' in html and 'id="estimate-plan"' in html
    for row in report["estimates"]:
        assert f'data-code="{row["code"]}"' in html
        assert f"{row['share']:.3f}" in html
    assert html.count('<g class="estimate-row">') == len(report["estimates"])


def test_the_page_without_a_query_shows_the_form_and_a_project_without_raters_says_so(
    client, project, lead, sampled
):
    client.force_login(lead)
    page = client.get(reverse("estimates_page", args=[project.pk]))
    assert page.status_code == 200 and b'id="estimate-form"' in page.content
    MachineRater.objects.filter(project=project).delete()
    page = client.get(reverse("estimates_page", args=[project.pk]))
    assert b'id="no-raters"' in page.content


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"level": "sub_theme"}, "level"),
        ({"by": "month"}, "by"),
        ({"replay_sample": "1"}, "replay_sample"),
        ({"replay_sample": "500"}, "replay_sample"),
        ({"plan": "0.7"}, "plan"),
    ],
)
def test_a_bad_query_is_a_400_naming_the_field(client, project, lead, sampled, query, field):
    client.force_login(lead)
    query = {"rater": sampled.pk, **query}
    api = client.get(reverse("api_estimates", args=[project.pk]), query)
    assert api.status_code == 400
    assert field in api.json()["errors"]
    page = client.get(reverse("estimates_page", args=[project.pk]), query)
    assert page.status_code == 400
    assert f'id="{field}-errors"'.encode() in page.content


def test_another_projects_rater_is_not_a_choice(client, project, lead, sampled, taxonomy_version):
    from annotator.models import Project

    other = Project.objects.create(name="Other study", taxonomy_version=taxonomy_version)
    foreign = MachineRater.objects.create(project=other, name="theirs", kind="classifier")
    client.force_login(lead)
    api = client.get(reverse("api_estimates", args=[project.pk]), {"rater": foreign.pk})
    assert api.status_code == 400 and "rater" in api.json()["errors"]


@pytest.mark.parametrize("who", ["annotator", "outsider"])
def test_annotators_and_outsiders_get_404(client, request, project, sampled, who):
    client.force_login(request.getfixturevalue(who))
    for name in ("estimates_page", "api_estimates"):
        answer = client.get(reverse(name, args=[project.pk]), {"rater": sampled.pk})
        assert answer.status_code == 404
