"""Scenario: every member opens the project page and follows its links.

Each role sees exactly the pages it can use: every link shown answers 200 for that member, and
every registered project page that is hidden from them is a 404 when they type its address.
The expected roles per page are written here from the issue (not read from the registry), so a
link registered with the wrong roles fails.
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotator.links import links_for, registered
from annotator.models import Membership, Role
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

# Which project pages each role must be offered.
EXPECTED = {
    Role.ANNOTATOR: {
        "label_next",
        "my_progress",
        "project_guideline",
        "taxonomy_proposals",
        "table_one",
        "interviews",
    },
    Role.RESEARCHER: {
        "issue_list",
        "agreement_report",
        "exports",
        "releases",
        "filter_recall",
        "raters_page",
        "estimates_page",
        "table_one",
        "interviews",
    },
    Role.LEAD: {
        "label_next",
        "my_progress",
        "project_guideline",
        "project_setup",
        "lead_dashboard",
        "disagreement_queue",
        "issue_list",
        "agreement_report",
        "label_audit",
        "policy_simulator",
        "exports",
        "releases",
        "filter_recall",
        "upload_issues",
        "raters_page",
        "estimates_page",
        "table_one",
        "taxonomy_proposals",
        "interviews",
    },
}
EXPECTED[Role.ADMIN] = EXPECTED[Role.LEAD]

LINK = re.compile(r'<a href="([^"]+)"')

# The lead's page by what a lead does (issue #28 item 7): each group's heading and its pages, in
# page order. Written from the issue, not read from the registry.
LEAD_GROUPS = [
    ("Label", ["label_next", "my_progress", "project_guideline", "taxonomy_proposals"]),
    ("Resolve and review", ["lead_dashboard", "disagreement_queue", "issue_list", "label_audit"]),
    (
        "Analyse",
        [
            "agreement_report",
            "policy_simulator",
            "raters_page",
            "estimates_page",
            "filter_recall",
            "table_one",
            "interviews",
        ],
    ),
    ("Publish", ["exports", "releases"]),
    ("Set up", ["project_setup", "upload_issues"]),
]
GROUP = re.compile(
    r'<section class="link-group"[^>]*>\s*<h2[^>]*>([^<]+)</h2>(.*?)</section>', re.S
)


@pytest.fixture
def members(project, lead, annotator, researcher):
    admin = make_user("adam-admin")
    # The next free rater-N: a fixed one collided with the fixture's rater-<user id>.
    Membership.objects.create(project=project, user=admin, role=Role.ADMIN)
    return {
        Role.LEAD: lead,
        Role.ANNOTATOR: annotator,
        Role.RESEARCHER: researcher,
        Role.ADMIN: admin,
    }


def _shown(client, project) -> list[str]:
    page = client.get(reverse("project_detail", args=[project.pk])).content.decode()
    actions = page.split('id="project-actions"', 1)[1].split("</nav>", 1)[0]
    return LINK.findall(actions)


@pytest.mark.parametrize("role", [Role.ANNOTATOR, Role.RESEARCHER, Role.LEAD, Role.ADMIN])
def test_each_role_is_offered_exactly_the_pages_it_can_open(
    client, project, issues_in_project, members, role
):
    client.force_login(members[role])
    shown = _shown(client, project)
    expected = {reverse(name, kwargs={"project_id": project.pk}) for name in EXPECTED[role]}
    assert set(shown) == expected
    for url in shown:
        response = client.get(url, follow=True)
        assert response.status_code == 200, url
    hidden = [link for link in registered() if link.url_name not in EXPECTED[role]]
    for link in hidden:
        url = reverse(link.url_name, kwargs={"project_id": project.pk})
        assert client.get(url).status_code == 404, url


def test_the_registry_knows_every_page_the_issue_names():
    # A page missing from the registry would be missing from every role's project page.
    names = {link.url_name for link in registered()}
    assert names == set().union(*EXPECTED.values())
    assert [link.url_name for link in links_for(Role.RESEARCHER)] == [
        "issue_list",
        "agreement_report",
        "raters_page",
        "estimates_page",
        "exports",
        "releases",
        "filter_recall",
        "table_one",
        "interviews",
    ]


def _groups(client, project) -> list[tuple[str, list[str]]]:
    page = client.get(reverse("project_detail", args=[project.pk])).content.decode()
    actions = page.split('id="project-actions"', 1)[1].split("</nav>", 1)[0]
    return [(heading.strip(), LINK.findall(body)) for heading, body in GROUP.findall(actions)]


def test_a_lead_finds_the_pages_grouped_by_what_a_lead_does(client, project, lead):
    client.force_login(lead)
    groups = _groups(client, project)
    expected = [
        (heading, [reverse(name, kwargs={"project_id": project.pk}) for name in names])
        for heading, names in LEAD_GROUPS
    ]
    assert groups == expected
    # One action stands out: labeling the next issue, the first button of the first group.
    page = client.get(reverse("project_detail", args=[project.pk])).content.decode()
    actions = page.split('id="project-actions"', 1)[1].split("</nav>", 1)[0]
    assert re.findall(r'<a href="([^"]+)" class="primary"', actions) == [
        reverse("label_next", kwargs={"project_id": project.pk})
    ]


def test_a_group_with_none_of_a_members_pages_is_left_out(client, project, annotator):
    client.force_login(annotator)
    headings = [heading for heading, _links in _groups(client, project)]
    assert headings == ["Label", "Analyse"]


def test_the_groups_read_in_chinese(client, project, lead):
    client.force_login(lead)
    page = client.get(
        reverse("project_detail", args=[project.pk]), HTTP_ACCEPT_LANGUAGE="zh-hans"
    ).content.decode()
    actions = page.split('id="project-actions"', 1)[1].split("</nav>", 1)[0]
    headings = [heading.strip() for heading, _body in GROUP.findall(actions)]
    assert headings == ["标注", "裁决与审查", "分析", "发布", "项目配置"]
    # The five links that stayed English (issue #28 item 5) read in Chinese, as every other.
    for english in ("Exports", "Releases", "Filter recall", "Upload issues", "Machine raters"):
        assert f">{english}<" not in actions
    assert ">导出<" in actions and ">机器评分者<" in actions


def test_a_researcher_reads_what_the_api_gives_them(client, project, researcher):
    """The agreement page and the agreement API answer the same member alike, and the
    taxonomy detail files of an export are theirs to download; an annotator gets neither."""
    client.force_login(researcher)
    assert client.get(reverse("agreement_report", args=[project.pk])).status_code == 200
    assert client.get(reverse("api_agreement", args=[project.pk])).status_code == 200
    details = client.get(reverse("export_details_csv", args=[project.pk, "A"]))
    assert details.status_code == 200
    assert details.content.decode("utf-8-sig").startswith("rootcause,subcategory,symptoms")
    assert client.get(reverse("export_details_csv", args=[project.pk, "Z"])).status_code == 404
    exports = client.get(reverse("exports", args=[project.pk])).content.decode()
    assert reverse("export_details_csv", args=[project.pk, "A"]) in exports


def test_an_annotator_is_refused_the_agreement_page_and_the_detail_files(
    client, project, annotator
):
    client.force_login(annotator)
    assert client.get(reverse("agreement_report", args=[project.pk])).status_code == 404
    assert client.get(reverse("api_agreement", args=[project.pk])).status_code == 404
    assert client.get(reverse("export_details_csv", args=[project.pk, "A"])).status_code == 404
