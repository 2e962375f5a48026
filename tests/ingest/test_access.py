"""Who may ingest: adding a repository, changing its API URL, syncing it and reading its runs
are for admins and for leads of a project that uses the repository. Everyone else gets 404.

Lena leads the pilot project, which uses Megatron-LM (its issues are in the queue). Leo leads
another project, which uses MindSpeed (named in its applied scope). The pilot's annotators,
its researcher and an outsider lead nothing.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from annotator.models import Membership, Project, Role
from ingest.models import Repository, SyncRun
from labeling.models import ProjectIssue
from tests.conftest import make_issue, make_user


@pytest.fixture
def megatron(project, repository):
    ProjectIssue.objects.create(project=project, issue=make_issue(repository, 1), position=0)
    return repository


@pytest.fixture
def other_lead(db) -> User:
    return make_user("leo-other-lead")


@pytest.fixture
def mindspeed(taxonomy_version, other_lead) -> Repository:
    repo = Repository.objects.create(
        forge="gitee", api_url="https://gitee.com/api/v5", owner="ascend", name="MindSpeed"
    )
    other = Project.objects.create(
        name="Gitee study", taxonomy_version=taxonomy_version,
        scope={"repository_ids": [repo.pk], "filter_statuses": []},
    )  # fmt: skip
    Membership.objects.create(project=other, user=other_lead, role=Role.LEAD, pseudonym="leo")
    return repo


@pytest.fixture
def runs(megatron, mindspeed) -> dict[str, SyncRun]:
    return {
        "megatron": SyncRun.objects.create(repository=megatron, status="done"),
        "mindspeed": SyncRun.objects.create(repository=mindspeed, status="done"),
    }


@pytest.fixture
def admin_user(db) -> User:
    return make_user("ana-admin", is_staff=True)


def edit(repo: Repository, api_url: str) -> dict:
    return {"forge": repo.forge, "owner": repo.owner, "name": repo.name, "api_url": api_url,
            "sync_interval_hours": "0"}  # fmt: skip


@pytest.mark.parametrize("persona", ["other_lead", "annotator", "researcher", "outsider"])
def test_those_who_do_not_lead_a_project_using_megatron_get_404_everywhere(
    request, client, persona, megatron, runs
):
    client.force_login(request.getfixturevalue(persona))
    assert client.get(reverse("sync_run", args=[runs["megatron"].pk])).status_code == 404
    htmx = client.get(reverse("sync_run", args=[runs["megatron"].pk]), headers={"HX-Request": "1"})
    assert htmx.status_code == 404
    assert client.post(reverse("repository_sync", args=[megatron.pk])).status_code == 404
    assert client.get(reverse("repository_edit", args=[megatron.pk])).status_code == 404
    changed = client.post(
        reverse("repository_edit", args=[megatron.pk]), edit(megatron, "https://gitlab.com")
    )
    assert changed.status_code == 404
    megatron.refresh_from_db()
    assert megatron.api_url == "https://api.github.com"
    assert SyncRun.objects.filter(repository=megatron).count() == 1  # no sync started
    listing = client.get(reverse("repositories"))
    if persona == "other_lead":  # a lead sees the page, with their own repositories only
        assert listing.status_code == 200
        page = listing.content.decode()
        assert "ascend/MindSpeed" in page and "NVIDIA/Megatron-LM" not in page
    else:
        assert listing.status_code == 404


@pytest.mark.parametrize("persona", ["annotator", "researcher", "outsider"])
def test_only_leads_and_admins_may_add_a_repository(request, client, persona, project):
    client.force_login(request.getfixturevalue(persona))
    response = client.post(
        reverse("repositories"),
        {"forge": "github", "owner": "acme", "name": "engine", "sync_interval_hours": "0",
         "project": project.pk},
    )  # fmt: skip
    assert response.status_code == 404
    assert not Repository.objects.filter(name="engine").exists()


def test_a_lead_of_a_project_using_the_repository_may_manage_it(client, lead, megatron, runs):
    # A sync started here is queued on commit, which a test's transaction never reaches: no
    # request goes to github.com.
    client.force_login(lead)
    page = client.get(reverse("sync_run", args=[runs["megatron"].pk]))
    assert page.status_code == 200 and "Megatron-LM" in page.content.decode()
    listing = client.get(reverse("repositories")).content.decode()
    assert "NVIDIA/Megatron-LM" in listing and "ascend/MindSpeed" not in listing
    # … but not the repositories and runs of the other project.
    assert client.get(reverse("sync_run", args=[runs["mindspeed"].pk])).status_code == 404
    synced = client.post(reverse("repository_sync", args=[megatron.pk]))
    run = SyncRun.objects.filter(repository=megatron).latest("id")
    assert synced.status_code == 302 and synced.url == reverse("sync_run", args=[run.pk])
    saved = client.post(
        reverse("repository_edit", args=[megatron.pk]),
        {**edit(megatron, "https://api.github.com/"), "group": "Megatron"},
    )
    assert saved.status_code == 302


def test_a_lead_of_a_project_naming_the_repository_in_its_scope_may_sync_it(
    client, other_lead, mindspeed, runs
):
    client.force_login(other_lead)
    assert client.get(reverse("sync_run", args=[runs["mindspeed"].pk])).status_code == 200
    assert client.post(reverse("repository_sync", args=[mindspeed.pk])).status_code == 302


def test_changing_the_api_url_is_held_to_the_allowlist(client, lead, megatron, settings):
    settings.FORGE_API_HOSTS = []
    client.force_login(lead)
    page = client.post(
        reverse("repository_edit", args=[megatron.pk]), edit(megatron, "http://127.0.0.1:8000/")
    )
    assert page.status_code == 200
    assert "127.0.0.1 is not a forge API host" in page.content.decode()
    megatron.refresh_from_db()
    assert megatron.api_url == "https://api.github.com"


def test_a_lead_adds_a_repository_for_a_project_they_lead_only(
    client, lead, project, other_lead, mindspeed
):
    leo_project = Project.objects.get(name="Gitee study")
    client.force_login(lead)
    new = {"forge": "github", "owner": "acme", "name": "engine", "sync_interval_hours": "0"}
    for extra in ({}, {"project": leo_project.pk}):  # none, or someone else's project
        page = client.post(reverse("repositories"), {**new, **extra})
        assert page.status_code == 200 and 'id="id_project"' in page.content.decode()
    assert not Repository.objects.filter(name="engine").exists()
    added = client.post(reverse("repositories"), {**new, "project": project.pk})
    assert added.status_code == 302
    repo = Repository.objects.get(name="engine")
    project.refresh_from_db()
    assert repo.pk in project.scope["repository_ids"]
    assert client.get(reverse("repository_edit", args=[repo.pk])).status_code == 200


def test_adding_to_an_all_repositories_scope_keeps_what_the_project_holds(
    client, lead, project, megatron
):
    project.scope = {"repository_ids": [], "filter_statuses": []}  # "none ticked: all"
    project.save()
    client.force_login(lead)
    client.post(
        reverse("repositories"),
        {"forge": "github", "owner": "acme", "name": "engine", "sync_interval_hours": "0",
         "project": project.pk},
    )  # fmt: skip
    project.refresh_from_db()
    engine = Repository.objects.get(name="engine")
    assert project.scope["repository_ids"] == [megatron.pk, engine.pk]
    assert project.scope["filter_statuses"] == []


def test_an_admin_manages_every_repository(client, admin_user, runs, megatron, mindspeed):
    client.force_login(admin_user)
    listing = client.get(reverse("repositories")).content.decode()
    assert "NVIDIA/Megatron-LM" in listing and "ascend/MindSpeed" in listing
    for run in runs.values():
        assert client.get(reverse("sync_run", args=[run.pk])).status_code == 200
    added = client.post(
        reverse("repositories"),
        {"forge": "gitlab", "owner": "group", "name": "tool", "sync_interval_hours": "0"},
    )
    assert added.status_code == 302
    assert Repository.objects.get(name="tool").api_url == "https://gitlab.com/api/v4"
