"""Who gets which issues in an export: Rita the researcher gets what the API shows her (final
issues); Lena the lead may ask for every issue, with its status, and that export stays hers."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from dataset.exports import export_path, run_export_job
from dataset.models import ExportJob
from labeling.models import ProjectIssue
from tests.builders import final_issue, label_item

pytestmark = pytest.mark.django_db


@pytest.fixture
def labeled(project, issues_in_project, annotator, other_annotator, settings, tmp_path):
    """#100 final (C.5), #101 in disagreement (B.2 / C.1), #102 labeled once, the rest open."""
    settings.EXPORT_ROOT = tmp_path / "exports"
    project.annotations_per_issue = 2  # Ada and Otto are the panel
    project.save(update_fields=["annotations_per_issue"])
    first, second, third = ProjectIssue.objects.filter(project=project).order_by("position")[:3]
    final_issue(project, first, "C.5", "C.5")  # unanimous: final
    label_item(annotator, project, second, "B.2")
    label_item(other_annotator, project, second, "C.1")
    label_item(annotator, project, third, "A.1")
    second.refresh_from_db()
    assert second.status == ProjectIssue.Status.DISAGREEMENT
    return project, issues_in_project


def start(client, user, project, **data) -> ExportJob:
    client.force_login(user)
    assert client.post(reverse("exports", args=[project.pk]), data).status_code == 302
    job = ExportJob.objects.order_by("-pk").first()
    run_export_job(job.pk)
    job.refresh_from_db()
    assert job.status == "done", job.error
    return job


def study_rows(job: ExportJob) -> list[list[str]]:
    with zipfile.ZipFile(export_path(job)) as zf:
        name = next(n for n in zf.namelist() if n.startswith("labels/"))
        text = zf.read(name).decode("utf-8").lstrip("\ufeff")
    return list(csv.reader(io.StringIO(text)))


def jsonl(job: ExportJob) -> list[dict]:
    with zipfile.ZipFile(export_path(job)) as zf:
        return [json.loads(line) for line in zf.read("issues.jsonl").decode().splitlines()]


def test_a_researchers_export_holds_what_the_api_shows_her(client, labeled, researcher):
    project, issues = labeled
    job = start(client, researcher, project, everything="on")  # not hers to ask: ignored
    assert job.everything is False

    api = APIClient()
    api.force_authenticate(researcher)
    shown = api.get(reverse("api_annotations", args=[project.pk])).json()["results"]
    shown_urls = {a["issue_url"] for a in shown}
    assert shown_urls == {issues[0].url}

    rows = study_rows(job)
    assert rows[0] == ["Issue_URL", "Label1", "Label2", "Final_Label"]
    assert [r[0] for r in rows[1:]] == [issues[0].url]
    assert rows[1][1:] == ["C.5", "C.5", "C.5"]
    records = jsonl(job)
    assert {r["url"] for r in records} == shown_urls
    annotations = sorted((a["annotator"], a["code"]) for r in records for a in r["annotations"])
    assert annotations == sorted((a["annotator"], a["code"]) for a in shown)


def test_a_lead_may_export_every_issue_with_its_status(client, labeled, lead, researcher):
    project, issues = labeled
    job = start(client, lead, project, everything="on")
    assert job.everything is True

    rows = study_rows(job)
    assert rows[0] == ["Issue_URL", "Label1", "Label2", "Final_Label", "Status"]
    by_url = {r[0]: r[1:] for r in rows[1:]}
    assert len(by_url) == len(issues)
    assert by_url[issues[0].url] == ["C.5", "C.5", "C.5", "final"]
    assert by_url[issues[1].url] == ["B.2", "C.1", "", "disagreement"]
    assert by_url[issues[2].url][-1] == "open"
    assert {r["status"] for r in jsonl(job)} == {"final", "disagreement", "open"}
    with zipfile.ZipFile(export_path(job)) as zf:
        manifest = json.loads(zf.read("manifest.json"))
    assert manifest["scope"] == "all issues, with their status"
    assert manifest["issues"] == len(issues)

    # Rita cannot see or download Lena's export of unfinished labels.
    client.force_login(researcher)
    page = client.get(reverse("exports", args=[project.pk])).content.decode()
    assert f"Export #{job.pk}," not in page
    for name in ("export_job", "export_download"):
        assert client.get(reverse(name, args=[project.pk, job.pk])).status_code == 404
    api = APIClient()
    api.force_authenticate(researcher)
    listed = api.get(reverse("api_exports", args=[project.pk])).json()
    listed = listed["results"] if isinstance(listed, dict) else listed
    assert job.pk not in [j["id"] for j in listed]
    for name in ("api_export", "api_export_download"):
        assert api.get(reverse(name, args=[project.pk, job.pk])).status_code == 404
    assert Path(export_path(job)).exists()


def test_the_api_starts_either_export_for_a_lead_and_only_the_final_one_for_others(
    labeled, lead, researcher, settings
):
    project, _ = labeled
    api = APIClient()
    for user, asked, expected in [
        (lead, {"everything": "false"}, False),
        (lead, {"everything": True}, True),
        (researcher, {"everything": True}, False),
    ]:
        api.force_authenticate(user)
        response = api.post(reverse("api_exports", args=[project.pk]), asked, format="json")
        assert response.status_code == 201
        assert response.json()["everything"] is expected


def test_the_command_exports_final_issues_unless_asked_for_everything(labeled, tmp_path):
    from django.core.management import call_command

    project, issues = labeled
    for flags, expected in [([], 1), (["--everything"], len(issues))]:
        path = tmp_path / f"cli{len(flags)}.zip"
        out = io.StringIO()
        call_command("export_dataset", "--project", project.name, str(path), *flags, stdout=out)
        assert "manifest" not in out.getvalue() and "issues.jsonl" in out.getvalue()
        with zipfile.ZipFile(path) as zf:
            assert len(zf.read("issues.jsonl").decode().splitlines()) == expected
