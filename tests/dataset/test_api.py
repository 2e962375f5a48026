"""The REST API: every role on every endpoint, annotators' blindness, filters, token, schema."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import override_settings
from django.urls import reverse
from knox.crypto import hash_token
from knox.models import AuthToken
from rest_framework.test import APIClient

from annotator.accounts import create_api_token
from annotator.models import Membership, Project, Role
from dataset.exports import run_export_job
from dataset.models import ExportJob
from ingest.models import Issue, Repository
from labeling.models import Annotation, ProjectIssue, Resolution
from taxonomy.models import TaxonomyNode, TaxonomyVersion
from tests.conftest import PASSWORD, STUDY_TAXONOMY_ID, make_issue, make_user

pytestmark = pytest.mark.django_db

PERSONAS = ["lead", "annotator", "other_annotator", "researcher", "outsider"]


def api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {create_api_token(user)[0]}")
    return client


# The labeled issues and the ready export every test reads are built once for the module
# (module_db, tests/conftest.py): with the four members they name, whom the persona fixtures
# below read instead of making. The outsider stays per test.
MEMBERS = {
    "lead": ("lena-lead", Role.LEAD),
    "annotator": ("ada-annotator", Role.ANNOTATOR),
    "other_annotator": ("otto-annotator", Role.ANNOTATOR),
    "researcher": ("rita-researcher", Role.RESEARCHER),
}


@pytest.fixture(scope="module")
def export_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("exports")


@pytest.fixture(scope="module")
def world_ids(module_db, request, export_root) -> dict[str, int]:
    """Two labeled issues: #100 final (C.5), #101 in disagreement; an export that is ready."""

    def build() -> dict[str, int]:
        version = TaxonomyVersion.objects.get(pk=request.config.stash[STUDY_TAXONOMY_ID])
        project = Project.objects.create(name="LLM issues pilot", taxonomy_version=version)
        users = {}
        for persona, (username, role) in MEMBERS.items():
            users[persona] = make_user(username)
            Membership.objects.create(
                project=project,
                user=users[persona],
                role=role,
                pseudonym=f"rater-{users[persona].pk}",
            )
        repository = Repository.objects.create(
            forge=Repository.Forge.GITHUB, api_url="https://api.github.com", owner="NVIDIA",
            name="Megatron-LM", group="Megatron", is_framework=False,
        )  # fmt: skip
        issues = [make_issue(repository, 100 + i) for i in range(6)]
        for i, issue in enumerate(issues):
            ProjectIssue.objects.create(project=project, issue=issue, position=i)
        node = {n.code: n for n in TaxonomyNode.objects.filter(version=version)}
        first, second = issues[:2]
        first.created_at = datetime(2024, 3, 1, tzinfo=UTC)
        first.state = "closed"
        first.save()
        raters = (users["annotator"], users["other_annotator"])
        for issue, labels in [(first, ("C.5", "C.5")), (second, ("B.2", "C.1"))]:
            for user, code in zip(raters, labels, strict=True):
                Annotation.objects.create(
                    project=project,
                    issue=issue,
                    annotator=user,
                    theme=node[code],
                    issue_type=node[code].parent,
                )
        Resolution.objects.create(
            project=project,
            issue=first,
            method="unanimous",
            theme=node["C.5"],
            issue_type=node["C"],
            decided_by=users["lead"],
        )
        ProjectIssue.objects.filter(project=project, issue=first).update(status="final")
        ProjectIssue.objects.filter(project=project, issue=second).update(status="disagreement")
        job = ExportJob.objects.create(project=project, requested_by=users["lead"])
        with override_settings(EXPORT_ROOT=export_root):
            run_export_job(job.pk)
        return {"project": project.pk, "job": job.pk, "first": first.pk, "second": second.pk}

    return module_db(build)


@pytest.fixture
def world(world_ids, db, settings, export_root):
    cache.clear()  # the same project id in every test: no test reads another's cached report
    settings.EXPORT_ROOT = export_root
    return {
        "project": Project.objects.get(pk=world_ids["project"]),
        "job": ExportJob.objects.get(pk=world_ids["job"]),
        "first": Issue.objects.get(pk=world_ids["first"]),
        "second": Issue.objects.get(pk=world_ids["second"]),
    }


def _member(persona: str) -> User:
    return User.objects.get(username=MEMBERS[persona][0])


@pytest.fixture
def lead(world):
    return _member("lead")


@pytest.fixture
def annotator(world):
    return _member("annotator")


@pytest.fixture
def other_annotator(world):
    return _member("other_annotator")


@pytest.fixture
def researcher(world):
    return _member("researcher")


# endpoint -> the personas that may use it (everyone else: 404).
READ = {
    "api_project": {"lead", "annotator", "other_annotator", "researcher"},
    "api_issues": {"lead", "annotator", "other_annotator", "researcher"},
    "api_annotations": {"lead", "annotator", "other_annotator", "researcher"},
    "api_resolutions": {"lead", "annotator", "other_annotator", "researcher"},
    "api_agreement": {"lead", "researcher"},
    "api_exports": {"lead", "researcher"},
    "api_export": {"lead", "researcher"},
    "api_export_download": {"lead", "researcher"},
}


def url_for(name: str, world) -> str:
    args = [world["project"].pk]
    if name in ("api_export", "api_export_download"):
        args.append(world["job"].pk)
    return reverse(name, args=args)


def test_every_role_on_every_endpoint(world, request):
    # One setup for the whole matrix (the taxonomy fixture is slow); every cell is checked
    # and all mismatches reported together.
    wrong = []
    for persona in PERSONAS:
        client = api(request.getfixturevalue(persona))
        for name, allowed in READ.items():
            status = client.get(url_for(name, world)).status_code
            expected = 200 if persona in allowed else 404
            if status != expected:
                wrong.append((persona, name, status, expected))
    assert wrong == []


def test_anonymous_gets_401(world):
    anonymous = APIClient()
    for name in READ:
        assert anonymous.get(url_for(name, world)).status_code == 401, name
    assert anonymous.get(reverse("api_projects")).status_code == 401


def test_project_list_shows_only_own_projects(world, request):
    for persona in PERSONAS:
        data = api(request.getfixturevalue(persona)).get(reverse("api_projects")).json()
        names = [p["name"] for p in data["results"]]
        assert names == ([] if persona == "outsider" else ["LLM issues pilot"]), persona


def test_annotators_see_only_their_own_annotations(world, annotator, other_annotator):
    data = api(annotator).get(url_for("api_annotations", world)).json()
    assert data["count"] == 2 and all(a["is_mine"] for a in data["results"])
    assert {a["annotator"] for a in data["results"]} == {f"rater-{annotator.pk}"}
    # Not even a count of the other annotator's labels leaks.
    other = api(other_annotator).get(url_for("api_annotations", world)).json()
    assert other["count"] == 2
    assert {a["theme"] for a in other["results"]} == {"C.5", "C.1"}


def test_lead_sees_all_annotations_under_pseudonyms(world, annotator, lead):
    data = api(lead).get(url_for("api_annotations", world)).json()
    assert data["count"] == 4
    assert annotator.username not in str(data)


def test_researchers_see_annotations_of_final_issues_only(world, researcher):
    data = api(researcher).get(url_for("api_annotations", world)).json()
    assert data["count"] == 2
    assert {a["issue"] for a in data["results"]} == {world["first"].pk}


def test_resolutions_are_the_final_labels(world, researcher):
    data = api(researcher).get(url_for("api_resolutions", world)).json()
    assert [(r["issue_url"], r["code"], r["type"]) for r in data["results"]] == [
        (world["first"].url, "C.5", "C")
    ]


FILTERS = [
    ({}, ["100", "101", "102", "103", "104", "105"]),
    ({"final_type": "C"}, ["100"]),
    ({"final_type": "B"}, []),
    ({"theme": "C.5"}, ["100"]),
    ({"state": "closed"}, ["100"]),
    ({"status": "disagreement"}, ["101"]),
    ({"repository": "NVIDIA/Megatron-LM"}, ["100", "101", "102", "103", "104", "105"]),
    ({"repository": "other/repo"}, []),
    ({"created_after": "2024-01-01"}, ["100"]),
    ({"created_before": "2023-12-31"}, []),
]


def test_issue_filters(world, researcher):
    client = api(researcher)
    for query, numbers in FILTERS:
        data = client.get(url_for("api_issues", world), query).json()
        assert [i["number"] for i in data["results"]] == numbers, query


def test_annotators_do_not_learn_of_disagreements(world, annotator, lead):
    url = url_for("api_issues", world)
    mine = api(annotator).get(url, {"repository": "NVIDIA/Megatron-LM"}).json()["results"]
    assert [i["status"] for i in mine[:2]] == ["final", "open"]
    assert api(annotator).get(url, {"status": "disagreement"}).json()["count"] == 0
    assert api(lead).get(url, {"status": "disagreement"}).json()["count"] == 1


def test_issue_shows_its_final_label(world, annotator):
    data = api(annotator).get(url_for("api_issues", world), {"theme": "C.5"}).json()
    assert data["results"][0]["final"]["code"] == "C.5"


def test_agreement_endpoint(world, lead):
    data = api(lead).get(url_for("api_agreement", world)).json()
    assert data["issues"] == 2 and data["annotations"] == 4


def test_starting_an_export(world, request):
    for persona in PERSONAS:
        before = ExportJob.objects.count()
        response = api(request.getfixturevalue(persona)).post(url_for("api_exports", world))
        if persona in ("lead", "researcher"):
            assert response.status_code == 201 and response.json()["status"] == "pending"
            assert ExportJob.objects.count() == before + 1
        else:
            assert response.status_code == 404, persona
            assert ExportJob.objects.count() == before


def test_export_detail_and_download(world, researcher):
    client = api(researcher)
    detail = client.get(url_for("api_export", world)).json()
    assert detail["status"] == "done" and detail["download_url"].endswith("/download/")
    response = client.get(url_for("api_export_download", world))
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment")


def test_other_projects_jobs_are_404(world, researcher, taxonomy_version):
    other = Project.objects.create(name="Other", taxonomy_version=taxonomy_version)
    job = ExportJob.objects.create(project=other)
    url = reverse("api_export", args=[world["project"].pk, job.pk])
    assert api(researcher).get(url).status_code == 404


def test_api_is_read_only_for_labels(world, researcher, lead):
    for name in ("api_issues", "api_annotations", "api_resolutions"):
        assert api(lead).post(url_for(name, world), {}).status_code == 405
        assert api(researcher).delete(url_for(name, world)).status_code == 405


def test_token_is_obtained_with_a_password(world, lead):
    response = APIClient().post(
        reverse("api_token"), {"username": lead.username, "password": PASSWORD}
    )
    assert response.status_code == 200
    assert AuthToken.objects.get(user=lead).digest == hash_token(response.json()["token"])


def test_schema_and_docs(client, world, lead):
    schema = api(lead).get(reverse("api_schema"), {"format": "json"})  # anonymous: 401
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert "/api/projects/{project_id}/issues/" in paths
    params = {p["name"] for p in paths["/api/projects/{project_id}/issues/"]["get"]["parameters"]}
    assert {"repository", "state", "final_type", "theme", "created_after"} <= params
    client.force_login(lead)
    docs = client.get(reverse("api_docs"))
    assert docs.status_code == 200
    assert "/api/projects/{project_id}/annotations/" in docs.content.decode()
    assert "<script" not in docs.content.decode().split("</header>")[1]


def test_docs_render_enum_help_as_a_list(client, world, lead):
    """drf-spectacular writes an enum's values as Markdown ("* `final` - Final"):
    the docs page shows them as a list, not as raw asterisks on one line."""
    client.force_login(lead)
    page = client.get(reverse("api_docs")).content.decode()
    assert "<li><code>" in page
    assert "* `" not in page


def test_an_export_with_real_names_is_for_admins_only(world, lead, researcher, client):
    project = world["project"]
    real = ExportJob.objects.create(project=project, requested_by=lead, real_names=True)
    run_export_job(real.pk)
    for persona in (lead, researcher):
        assert (
            api(persona).get(reverse("api_export", args=[project.pk, real.pk])).status_code == 404
        )
        listed = api(persona).get(url_for("api_exports", world)).json()
        ids = [job["id"] for job in listed.get("results", listed)]
        assert real.pk not in ids and world["job"].pk in ids
        client.force_login(persona)
        page = f"/projects/{project.pk}/exports/{real.pk}/download/"
        assert client.get(page).status_code == 404
    Membership.objects.filter(project=project, user=lead).update(role=Role.ADMIN)
    download = reverse("api_export_download", args=[project.pk, real.pk])
    assert api(lead).get(download).status_code == 200
