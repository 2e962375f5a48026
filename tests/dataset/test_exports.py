"""Exports: the ZIP with its manifest, pseudonyms, taxonomy details, the job page and download."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import socket
import zipfile
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone

from annotator.models import Membership, Project, Role
from dataset.exports import ExportContext, build_zip, run_export_job, write_taxonomy_details
from dataset.importer import import_labels
from dataset.models import ExportJob
from labeling.models import Annotation, ProjectIssue
from lib import jobclaim
from taxonomy.loader import parse_type_file
from taxonomy.models import TaxonomyNode
from tests.dataset.helpers import MINDSPEED, SAMPLES, read_rows

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(taxonomy_version, lead, annotator, researcher, outsider):
    import_labels("Study", SAMPLES)
    project = Project.objects.get(name="Study")
    for user, role in [
        (lead, Role.LEAD),
        (annotator, Role.ANNOTATOR),
        (researcher, Role.RESEARCHER),
    ]:
        Membership.objects.create(project=project, user=user, role=role)
    return project


@pytest.fixture(scope="module")
def small_study_id(module_db) -> int:
    """MindSpeed only (80 rows), imported once for the module (module_db), after the test of
    `study`, which imports the samples into a project of the same name."""

    def build() -> int:
        import_labels("Study", [MINDSPEED])
        return Project.objects.get(name="Study").pk

    return module_db(build)


@pytest.fixture
def small_study(small_study_id, db, lead, annotator, researcher, outsider):
    """Enough for permissions and jobs, and quick; this test's personas are its members."""
    cache.clear()  # the same project id in every test
    project = Project.objects.get(pk=small_study_id)
    for user, role in [
        (lead, Role.LEAD),
        (annotator, Role.ANNOTATOR),
        (researcher, Role.RESEARCHER),
    ]:
        Membership.objects.create(project=project, user=user, role=role)
    return project


def test_zip_holds_every_format_with_a_manifest_of_hashes(study, tmp_path):
    path = tmp_path / "out.zip"
    build_zip(study, path)
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        manifest = json.loads(zf.read("manifest.json"))
        assert names == {
            "manifest.json",
            "labels/Megatron-LM.csv",
            "labels/MindSpeed.csv",
            "issues.jsonl",
            "taxonomy/question_intents.csv",
            "taxonomy/requirement_expections.csv",
            "taxonomy/bug_symptoms.csv",
            "table_one.csv",
            "agreement.csv",
            "machine_labels.csv",
        }
        for entry in manifest["files"]:
            data = zf.read(entry["name"])
            assert hashlib.sha256(data).hexdigest() == entry["sha256"]
            assert len(data) == entry["bytes"]
        assert manifest["taxonomy_version"] == str(study.taxonomy_version)
        assert manifest["exported_at"] and manifest["pseudonymous"] is True

        megatron = zf.read("labels/Megatron-LM.csv").decode("utf-8")
        assert megatron.startswith("\ufeff")
        rows = list(csv.reader(io.StringIO(megatron.lstrip("\ufeff"))))
        assert rows == read_rows(SAMPLES[0])

        lines = zf.read("issues.jsonl").decode().splitlines()
        assert len(lines) == 1194
        first = json.loads(lines[0])
        assert first["url"] == "https://github.com/NVIDIA/Megatron-LM/issues/1516"
        assert [a["annotator"] for a in first["annotations"]] == [f"rater-{i}" for i in range(1, 8)]
        assert first["resolution"]["code"] == "A.3" and first["resolution"]["method"] == "imported"
        created = datetime.fromisoformat(first["annotations"][0]["created_at"])
        assert created.utcoffset() == timedelta(0)

        table_one = list(csv.reader(io.StringIO(zf.read("table_one.csv").decode())))
        assert table_one[-1][0] == "Sum" and table_one[-1][5:8] == ["123", "691", "380"]


def test_real_names_only_when_asked(small_study, tmp_path, annotator):
    path = tmp_path / "named.zip"
    build_zip(small_study, path, real_names=True)
    with zipfile.ZipFile(path) as zf:
        first = json.loads(zf.read("issues.jsonl").decode().splitlines()[0])
    assert first["annotations"][0]["annotator"] == f"imported-{small_study.pk}-rater-1"


def test_taxonomy_details_group_annotators_summaries_under_sub_themes(
    project, issues_in_project, annotator, other_annotator
):
    sub = TaxonomyNode.objects.get(version=project.taxonomy_version, code="C.5.i")
    for user, summary in [
        (annotator, "Loss spikes, then NaN"),
        (other_annotator, "Hang at step 0"),
    ]:
        Annotation.objects.create(
            project=project,
            issue=issues_in_project[0],
            annotator=user,
            summary=summary,
            issue_type=sub.parent.parent,
            theme=sub.parent,
            sub_theme=sub,
        )

    def details(context) -> list[str]:
        out = io.StringIO()
        write_taxonomy_details(context, "C", out)
        text = out.getvalue()
        assert text.startswith("\ufeff")
        parsed = parse_type_file(text, "bug_symptoms.csv", "C", "Bug")
        node = next(s for t in parsed.children for s in t.children if s.code == "C.5.i")
        assert node.name == sub.name
        # The same tree as the taxonomy version (codes and names).
        stored = {
            n.code: n.name
            for n in TaxonomyNode.objects.filter(version=project.taxonomy_version)
            if n.code.startswith("C")
        }
        assert {n.code: n.name for n in parsed.walk()} == stored
        return node.details

    # The issue is still open: a researcher's export (final issues) holds no summary of it,
    # a lead's export of every issue does.
    assert details(project) == sub.details
    both = details(ExportContext(project, everything=True))
    # The published details first, then the summaries; the ASCII comma becomes a full-width one.
    assert both[: len(sub.details)] == sub.details
    assert both[len(sub.details) :] == ["Loss spikes\uff0c then NaN", "Hang at step 0"]
    ProjectIssue.objects.filter(project=project, issue=issues_in_project[0]).update(
        status=ProjectIssue.Status.FINAL
    )
    assert details(project) == both


@pytest.mark.parametrize("persona", ["lead", "researcher"])
def test_export_job_page_progress_and_download(client, small_study, export_root, persona, request):
    client.force_login(request.getfixturevalue(persona))
    url = reverse("exports", args=[small_study.pk])
    assert client.get(url).status_code == 200
    response = client.post(url, HTTP_HX_REQUEST="true")
    job = ExportJob.objects.get()
    html = response.content.decode()
    assert 'hx-trigger="every 1s"' in html  # polls while the job is queued
    assert job.status == "pending"
    run_export_job(job.pk)  # what the Celery task calls
    job.refresh_from_db()
    assert job.status == "done" and job.progress == 100
    fragment = client.get(reverse("export_job", args=[small_study.pk, job.pk])).content.decode()
    assert "hx-trigger" not in fragment and "download" in fragment
    response = client.get(reverse("export_download", args=[small_study.pk, job.pk]))
    assert response.status_code == 200
    data = b"".join(response.streaming_content)
    assert hashlib.sha256(data).hexdigest() == job.sha256
    assert zipfile.ZipFile(io.BytesIO(data)).read("manifest.json")
    assert Path(export_root, job.file_path).exists()
    run_export_job(job.pk)  # safe to run twice
    assert ExportJob.objects.get().sha256 == job.sha256


def test_only_admins_may_ask_for_real_names(client, small_study, export_root, lead):
    client.force_login(lead)
    client.post(reverse("exports", args=[small_study.pk]), {"real_names": "on"})
    assert ExportJob.objects.get().real_names is False
    Membership.objects.filter(project=small_study, user=lead).update(role=Role.ADMIN)
    client.post(reverse("exports", args=[small_study.pk]), {"real_names": "on"})
    assert ExportJob.objects.filter(real_names=True).count() == 1


@pytest.mark.parametrize("persona", ["annotator", "outsider"])
def test_exports_are_404_for_annotators_and_outsiders(
    client, small_study, export_root, persona, request
):
    job = ExportJob.objects.create(project=small_study)
    run_export_job(job.pk)
    client.force_login(request.getfixturevalue(persona))
    for name, args in [
        ("exports", [small_study.pk]),
        ("export_job", [small_study.pk, job.pk]),
        ("export_download", [small_study.pk, job.pk]),
    ]:
        assert client.get(reverse(name, args=args)).status_code == 404
    assert client.post(reverse("exports", args=[small_study.pk])).status_code == 404
    assert ExportJob.objects.count() == 1


def test_a_failed_export_says_why(small_study, export_root, monkeypatch):
    job = ExportJob.objects.create(project=small_study)
    # A directory where the ZIP should go makes writing fail for a real reason.
    target = Path(export_root, str(small_study.pk), job.filename)
    target.mkdir(parents=True)
    with pytest.raises(IsADirectoryError):
        run_export_job(job.pk)
    job.refresh_from_db()
    assert job.status == "failed" and "IsADirectoryError" in job.error


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_progress_then_download_in_chromium(live_server, page, project, issues_in_project, lead):
    from tests.conftest import log_in

    log_in(page, live_server, lead.username)
    page.goto(f"{live_server.url}{reverse('exports', args=[project.pk])}")
    page.click("#start-export")  # htmx POST: the job appears and polls for its progress
    page.wait_for_selector("#jobs li.job progress")
    assert page.locator("#no-jobs").count() == 0
    run_export_job(ExportJob.objects.get().pk)  # what the worker does
    page.wait_for_selector("#jobs a.download")
    with page.expect_download() as info:
        page.click("#jobs a.download")
    path = info.value.path()
    with zipfile.ZipFile(path) as zf:
        assert "manifest.json" in zf.namelist()


def test_a_job_runs_once_and_leaves_no_partial_file(small_study, export_root):
    job = ExportJob.objects.create(project=small_study)
    first = run_export_job(job.pk)
    assert first.status == "done"
    finished = first.finished_at
    # A redelivered task finds the job claimed and done: the file is not rebuilt.
    again = run_export_job(job.pk)
    assert again.finished_at == finished
    folder = Path(export_root, str(small_study.pk))
    assert [p.name for p in folder.iterdir()] == [job.filename]
    # A job another live worker is running right now is not started a second time: the task
    # is told to look again later.
    busy = ExportJob.objects.create(project=small_study)
    alive = f"{socket.gethostname()}:{os.getppid()}"
    ExportJob.objects.filter(pk=busy.pk).update(
        status="running", started_at=timezone.now(), worker=alive
    )
    with pytest.raises(jobclaim.Busy):
        run_export_job(busy.pk)
    assert ExportJob.objects.get(pk=busy.pk).status == "running"
    assert not Path(folder, busy.filename).exists()
    # Its worker killed (no such process any more) and its half-written file left behind:
    # the task delivered again takes the job over and builds it, the half file deleted.
    dead = 2**22 + 1  # above Linux's highest pid: no such process
    ExportJob.objects.filter(pk=busy.pk).update(worker=f"{socket.gethostname()}:{dead}")
    Path(folder, f"{busy.filename}.part-{dead}").write_bytes(b"PK half")
    taken = run_export_job(busy.pk)
    assert taken.status == "done" and taken.worker == f"{socket.gethostname()}:{os.getpid()}"
    assert sorted(p.name for p in folder.iterdir()) == sorted([job.filename, busy.filename])


def test_a_failed_export_is_marked_older_only_by_a_later_export_of_its_kind(client, project, lead):
    """Lena's export of every issue failed, then an export of final issues succeeded: that is
    another kind, so the failure stays current; after an export of every issue succeeds it
    is marked older."""
    failed = ExportJob.objects.create(
        project=project, requested_by=lead, everything=True, status="failed", error="OSError: x"
    )
    ExportJob.objects.create(project=project, requested_by=lead, status="done")
    client.force_login(lead)
    url = reverse("exports", args=[project.pk])

    def row() -> str:
        page = client.get(url).content.decode()
        start = page.index(f'id="job-{failed.pk}"')
        return page[start : page.index("</li>", start)]

    assert '<span class="error">OSError: x</span>' in row() and "older failure" not in row()
    later = ExportJob.objects.create(
        project=project, requested_by=lead, everything=True, status="done"
    )
    assert f"an older failure: #{later.pk} succeeded after it." in row()
