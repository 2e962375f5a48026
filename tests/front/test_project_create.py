"""Scenario: a new project made on its page, with its scope, K and members, all at once.

Adam (a superuser) and Lena (a lead an admin gave `annotator.add_project`) create projects;
only Adam lists existing accounts as members (Lena invites them once the project exists);
Ada (an annotator) and Oscar (an outsider) see no link but a word on who creates projects,
and the page tells them (403) that they may not and whom to ask. Refused input comes back
beside its field, and nothing is saved of a refused form.
"""

from __future__ import annotations

import html as html_module
import re
from datetime import UTC, date, datetime

import pytest
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.urls import reverse

from annotator.models import Membership, Project, Role
from ingest.models import Issue, Repository
from ingest.permissions import manageable_repositories
from labeling import setup
from labeling.models import ProjectIssue
from lib.refusal import Refusal
from tests.conftest import make_issue, make_user

pytestmark = pytest.mark.django_db

KEPT, OUT = Issue.FilterStatus.KEPT, Issue.FilterStatus.FILTERED_OUT


def grant_add_project(user) -> None:
    user.user_permissions.add(
        Permission.objects.get(content_type__app_label="annotator", codename="add_project")
    )


@pytest.fixture
def admin(db):
    return make_user("adam-admin", is_superuser=True, is_staff=True)


@pytest.fixture
def creator(lead, project, issues_in_project):
    """Lena leads the pilot (whose queue holds Megatron's issues) and may create projects."""
    grant_add_project(lead)
    return lead


@pytest.fixture
def gitee(db):
    return Repository.objects.create(
        forge=Repository.Forge.GITEE,
        api_url="https://gitee.com/api/v5",
        owner="ascend",
        name="MindSpeed",
    )


@pytest.fixture
def dated_issues(repository, gitee):
    """Megatron: ten issues opened on the 10th of each month of 2023 (January to October), the
    even ones kept by the keyword filter. MindSpeed: four kept issues opened in March 2023."""
    for i in range(10):
        make_issue(
            repository,
            500 + i,
            created_at=datetime(2023, i + 1, 10, tzinfo=UTC),
            filter_status=KEPT if i % 2 == 0 else OUT,
        )
    for i in range(4):
        make_issue(gitee, f"I{i}G", created_at=datetime(2023, 3, 1, tzinfo=UTC), filter_status=KEPT)


def form_data(taxonomy_version, **changes) -> dict:
    data = {
        "name": "Agents study",
        "description": "Issues of agent frameworks.",
        "taxonomy_version": str(taxonomy_version.pk),
        "annotations_per_issue": "5",
        "resolution_policy": Project.Policy.MAJORITY,
        "majority_threshold": "0.7",
        "members": "",
        "filter_statuses": [],
        "created_from": "",
        "created_to": "",
        "pilot_size": "0",
        "seed": "0",
    }
    data.update(changes)
    return data


def field_error(html: str, field: str) -> str:
    """The error list shown beside a field ("" if none)."""
    match = re.search(
        rf'<ul class="errorlist" id="id_{field}_error" data-field="{field}">(.*?)</ul>', html, re.S
    )
    return html_module.unescape(re.sub(r"<[^>]+>", " ", match.group(1))) if match else ""


def test_an_admin_creates_a_project_with_its_scope_k_and_members(
    client, admin, taxonomy_version, repository, gitee, dated_issues, annotator, other_annotator
):
    client.force_login(admin)
    response = client.post(
        reverse("project_create"),
        form_data(
            taxonomy_version,
            repositories=[str(repository.pk)],
            filter_statuses=[KEPT],
            created_from="2023-02-01",
            created_to="2023-07-31",
            pilot_size="2",
            seed="7",
            members=f"{annotator.username} annotator\n\n{other_annotator.username}   researcher\n",
        ),
    )
    project = Project.objects.get(name="Agents study")
    assert response.status_code == 302
    assert response["Location"] == reverse("project_detail", args=[project.pk])
    assert project.created_by == admin
    assert (project.annotations_per_issue, project.resolution_policy) == (5, "majority")
    assert project.majority_threshold == pytest.approx(0.7)
    # Megatron issues opened February to July 2023 and kept: months 3, 5 and 7 (i = 2, 4, 6).
    in_queue = ProjectIssue.objects.filter(project=project)
    assert sorted(in_queue.values_list("issue__number", flat=True)) == ["502", "504", "506"]
    assert in_queue.filter(is_pilot=True).count() == 2
    assert project.scope == {
        "repository_ids": [repository.pk],
        "filter_statuses": [KEPT],
        "created_from": "2023-02-01",
        "created_to": "2023-07-31",
    }
    assert project.queue_seed == 7
    roles = dict(project.memberships.values_list("user__username", "role"))
    assert roles == {
        admin.username: Role.LEAD,
        annotator.username: Role.ANNOTATOR,
        other_annotator.username: Role.RESEARCHER,
    }
    pseudonyms = list(project.memberships.values_list("pseudonym", flat=True))
    assert all(re.fullmatch(r"rater-\d+", p) for p in pseudonyms)
    assert len(set(pseudonyms)) == 3

    page = client.get(response["Location"]).content.decode()
    assert "created with 3 issues in scope and 3 members" in page


def test_a_lead_given_the_permission_creates_one_from_their_own_repositories_only(
    client, creator, repository, gitee, dated_issues, annotator
):
    client.force_login(creator)
    page = client.get(reverse("project_create")).content.decode()
    # Lena manages Megatron (her pilot's queue holds its issues), not MindSpeed.
    assert repository.full_name in page and gitee.full_name not in page

    # Ticking a repository she may not manage is refused beside the field.
    refused = client.post(
        reverse("project_create"),
        form_data(creator.memberships.get().project.taxonomy_version, repositories=[gitee.pk]),
    )
    assert refused.status_code == 400
    assert "not one of the available choices" in field_error(
        refused.content.decode(), "repositories"
    )
    assert not Project.objects.filter(name="Agents study").exists()

    # None ticked: every repository she manages (Megatron), not every repository.
    response = client.post(
        reverse("project_create"), form_data(creator.memberships.get().project.taxonomy_version)
    )
    assert response.status_code == 302
    project = Project.objects.get(name="Agents study")
    assert project.created_by == creator
    assert project.scope["repository_ids"] == [repository.pk]
    megatron_issues = Issue.objects.filter(repository=repository).count()  # 6 + 10
    assert megatron_issues == 16
    assert ProjectIssue.objects.filter(project=project).count() == megatron_issues
    assert not ProjectIssue.objects.filter(project=project, issue__repository=gitee).exists()
    assert project.role_of(creator) == Role.LEAD and project.role_of(annotator) is None


def test_a_creator_who_manages_no_repository_starts_with_an_empty_queue(
    client, outsider, taxonomy_version, repository, dated_issues
):
    grant_add_project(outsider)
    client.force_login(outsider)
    response = client.post(reverse("project_create"), form_data(taxonomy_version))
    assert response.status_code == 302
    project = Project.objects.get(name="Agents study")
    assert not ProjectIssue.objects.filter(project=project).exists()
    assert project.scope == {}
    assert project.role_of(outsider) == Role.LEAD


def test_only_admins_and_holders_of_the_permission_see_the_link_and_open_the_page(
    client, creator, annotator, outsider, admin
):
    url = reverse("project_create")
    staff = make_user("stan-staff", is_staff=True)
    # The probe fires: those allowed see the link and open the page.
    for user in (creator, admin, staff):
        client.force_login(user)
        assert 'id="new-project"' in client.get(reverse("home")).content.decode()
        assert client.get(url).status_code == 200
        assert 'id="who-creates-projects"' not in client.get(reverse("home")).content.decode()
    for user in (annotator, outsider):
        client.force_login(user)
        home = client.get(reverse("home")).content.decode()
        # No link, but a word on who creates projects.
        assert 'id="new-project"' not in home and 'id="who-creates-projects"' in home
        # The page outside every project says why not and whom to ask, with a 403.
        refused = client.get(url)
        assert refused.status_code == 403
        text = refused.content.decode()
        assert "You may not create projects" in text and "Ask an admin" in text
        assert 'name="name"' not in text  # no form
        assert client.post(url, {"name": "Sneaky"}).status_code == 403
    assert not Project.objects.filter(name="Sneaky").exists()
    client.logout()
    assert client.get(url).status_code == 302  # to the login page


def test_refused_fields_come_back_with_their_errors_beside_them(
    client, admin, taxonomy_version, project, annotator
):
    client.force_login(admin)
    before = Project.objects.count()
    response = client.post(
        reverse("project_create"),
        form_data(
            taxonomy_version,
            name=project.name.upper(),
            annotations_per_issue="0",
            created_from="2024-05-01",
            created_to="2024-04-30",
            members=f"{annotator.username} annotator\nnobody-here annotator\n"
            f"{annotator.username} lead\n{admin.username} lead\notto-annotator boss",
        ),
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "already exists" in field_error(html, "name")
    assert "between 1 and 50" in field_error(html, "annotations_per_issue")
    assert "ends before it starts" in field_error(html, "created_to")
    members = field_error(html, "members")
    assert 'line 2: no user named "nobody-here"' in members
    assert f"line 3: {annotator.username} is already on line 1" in members
    assert f"line 4: {admin.username} is you" in members
    assert 'line 5: unknown role "boss"' in members
    assert "line 1" not in members.replace("on line 1", "")
    assert "nobody-here annotator" in html  # what the admin typed stays
    assert Project.objects.count() == before

    too_many = client.post(
        reverse("project_create"), form_data(taxonomy_version, annotations_per_issue="51")
    )
    assert "between 1 and 50" in field_error(too_many.content.decode(), "annotations_per_issue")


def test_only_an_admin_adds_existing_accounts_and_a_lead_learns_no_username(
    client, creator, admin, taxonomy_version, annotator, repository
):
    """Issue #20, I1: Lena (who holds `add_project`) cannot put Ada in her new project as a
    lead, which would give Ada Megatron's sync rights without Ada accepting anything; her page
    has no members box and says to invite. What she posts there anyway adds nobody, and the
    answer is the same for a username that exists and one that does not."""
    client.force_login(creator)
    page = client.get(reverse("project_create")).content.decode()
    assert 'id="members-by-invite"' in page and 'name="members"' not in page
    answers = []
    for name, username in (("Agents study", annotator.username), ("Tools study", "nobody-here")):
        response = client.post(
            reverse("project_create"),
            form_data(taxonomy_version, name=name, members=f"{username} lead"),
        )
        assert response.status_code == 302
        # (The first answer's message is still queued in the session at the second.)
        said = [str(m) for m in get_messages(response.wsgi_request)][-1]
        answers.append(said.replace(name, "NAME"))
        project = Project.objects.get(name=name)
        assert list(project.memberships.values_list("user__username", flat=True)) == [
            creator.username
        ]
    assert answers[0] == answers[1]
    assert "no user named" not in answers[1]
    assert not manageable_repositories(annotator).filter(pk=repository.pk).exists()
    # The service refuses it too, whoever calls it.
    with pytest.raises(Refusal, match=r"^members: only an admin"):
        setup.create_project(
            creator,
            name="Direct",
            taxonomy_version_id=taxonomy_version.pk,
            k=3,
            policy=Project.Policy.LEAD_DECIDES,
            threshold=0.6,
            scope=None,
            members=[(annotator, Role.LEAD)],
        )
    assert not Project.objects.filter(name="Direct").exists()

    # The probe fires: an admin's page has the box, and the account joins with any role.
    client.force_login(admin)
    assert 'name="members"' in client.get(reverse("project_create")).content.decode()
    client.post(
        reverse("project_create"),
        form_data(taxonomy_version, name="Admin study", members=f"{annotator.username} admin"),
    )
    assert Project.objects.get(name="Admin study").role_of(annotator) == Role.ADMIN


def test_the_preview_counts_what_the_scope_selects_per_repository(
    client, admin, taxonomy_version, repository, gitee, dated_issues
):
    client.force_login(admin)
    data = form_data(
        taxonomy_version,
        name="",  # the rest of the form need not be valid to preview the scope
        repositories=[repository.pk, gitee.pk],
        filter_statuses=[KEPT],
        created_from="2023-02-01",
        created_to="2023-07-31",
        preview="1",
    )
    fragment = client.post(reverse("project_create"), data, HTTP_HX_REQUEST="true")
    html = fragment.content.decode()
    assert fragment.status_code == 200 and "<form" not in html
    # By hand: Megatron i = 2, 4, 6 (kept, opened March, May, July); MindSpeed all four.
    assert re.search(rf'data-repository="{repository.pk}"><td>[^<]+</td><td class="num">3<', html)
    assert re.search(rf'data-repository="{gitee.pk}"><td>[^<]+</td><td class="num">4<', html)
    assert '<strong id="scope-total">7</strong>' in html
    assert not Project.objects.filter(name="").exists()

    # Without htmx: the whole page, the typed values kept, no error shown for the empty name.
    page = client.post(reverse("project_create"), data)
    assert page.status_code == 200
    assert '<strong id="scope-total">7</strong>' in page.content.decode()
    assert field_error(page.content.decode(), "name") == ""

    # A refused scope says why, in the fragment.
    reversed_dates = client.post(
        reverse("project_create"),
        {**data, "created_from": "2023-08-01"},
        HTTP_HX_REQUEST="true",
    )
    assert "ends before it starts" in reversed_dates.content.decode()
    assert Project.objects.count() == 0


def test_a_bad_member_line_creates_nothing(
    client, admin, taxonomy_version, repository, dated_issues
):
    client.force_login(admin)
    response = client.post(
        reverse("project_create"),
        form_data(taxonomy_version, repositories=[repository.pk], members="ghost annotator"),
    )
    assert response.status_code == 400
    assert not Project.objects.exists()
    assert not Membership.objects.exists()
    assert not ProjectIssue.objects.exists()


def test_a_setting_the_service_refuses_rolls_everything_back(
    client, admin, taxonomy_version, repository, dated_issues, annotator
):
    """The form lets 0.5 through; `setup.configure` refuses it after the project, its members
    and nothing else were made: all of it is rolled back, the error beside the threshold."""
    client.force_login(admin)
    response = client.post(
        reverse("project_create"),
        form_data(
            taxonomy_version,
            repositories=[repository.pk],
            majority_threshold="0.5",
            members=f"{annotator.username} annotator",
        ),
    )
    assert response.status_code == 400
    assert "above 0.5" in field_error(response.content.decode(), "majority_threshold")
    assert not Project.objects.exists()
    assert not Membership.objects.exists()
    assert not ProjectIssue.objects.exists()


def test_create_project_is_all_or_nothing_when_called_directly(
    admin, taxonomy_version, repository, dated_issues, annotator
):
    with pytest.raises(Refusal, match=r"^members: .* listed twice"):
        setup.create_project(
            admin,
            name="Twice",
            taxonomy_version_id=taxonomy_version.pk,
            k=3,
            policy=Project.Policy.LEAD_DECIDES,
            threshold=0.6,
            scope=setup.Scope(repository_ids=[repository.pk]),
            members=[(annotator, Role.ANNOTATOR), (annotator, Role.LEAD)],
        )
    assert not Project.objects.exists() and not ProjectIssue.objects.exists()
    with pytest.raises(Refusal, match=r"^seed: "):
        setup.create_project(
            admin,
            name="Bad seed",
            taxonomy_version_id=taxonomy_version.pk,
            k=3,
            policy=Project.Policy.LEAD_DECIDES,
            threshold=0.6,
            scope=setup.Scope(created_from=date(2023, 1, 1)),
            seed=-1,
            members=[(annotator, Role.ANNOTATOR)],
        )
    assert not Project.objects.exists() and not Membership.objects.exists()


def test_a_new_project_can_start_with_the_adaptive_rule(client, admin, taxonomy_version):
    client.force_login(admin)
    response = client.post(
        reverse("project_create"),
        form_data(
            taxonomy_version,
            stopping_rule=Project.StoppingRule.ADAPTIVE,
            min_labels="3",
            lead_margin="2",
            needs_more_first="0",
        ),
    )
    assert response.status_code == 302
    project = Project.objects.get(name="Agents study")
    assert project.stopping_rule == Project.StoppingRule.ADAPTIVE
    assert (project.min_labels, project.lead_margin, project.needs_more_first) == (3, 2, False)


def test_a_new_project_with_the_minimum_at_k_is_made_with_a_warning(
    client, admin, taxonomy_version
):
    client.force_login(admin)
    warning = "behaves like the fixed rule"
    adaptive = {"stopping_rule": "adaptive", "lead_margin": "2"}
    # The probe: a minimum below K (5) makes no such remark.
    below = client.post(
        reverse("project_create"),
        form_data(taxonomy_version, min_labels="4", **adaptive),
        follow=True,
    )
    assert "Project Agents study created" in below.content.decode()
    assert warning not in below.content.decode()
    at_k = client.post(
        reverse("project_create"),
        form_data(taxonomy_version, name="At K", min_labels="5", **adaptive),
        follow=True,
    )
    text = at_k.content.decode()
    assert "Project At K created" in text and warning in text
    assert Project.objects.get(name="At K").min_labels == 5


def test_a_minimum_above_k_is_refused_beside_its_field(client, admin, taxonomy_version):
    client.force_login(admin)
    response = client.post(
        reverse("project_create"),
        form_data(taxonomy_version, stopping_rule="adaptive", min_labels="9"),
    )
    assert response.status_code == 400
    assert field_error(response.content.decode(), "min_labels")
    assert not Project.objects.filter(name="Agents study").exists()
