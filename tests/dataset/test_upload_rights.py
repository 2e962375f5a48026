"""Who may upload into what (#24 review, H1 and H2): Lena leads the pilot, which uses the
Megatron-LM repository and holds a final issue of it; Bruno leads another project. Bruno cannot
take Lena's repository into his project by uploading its URLs, no upload rewrites an issue
already stored in a forge repository (a final one least of all), two projects' uploaded files
never share a repository, and an admin may still upload anything."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from html import escape

import pytest
from django.urls import reverse

from annotator.models import Membership, Project, Role
from dataset import tasks
from dataset.models import UploadJob
from dataset.uploads import keep_file
from ingest.models import Comment, Issue, Repository
from ingest.permissions import may_manage
from labeling.models import ProjectIssue
from tests.conftest import make_issue, make_user

NOT_HIS = "not one of this project's repositories; add it on the Repositories page first"


@pytest.fixture
def upload_root(settings, tmp_path):
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    return settings.UPLOAD_ROOT


@pytest.fixture
def final_issue(project, repository) -> Issue:
    """Issue 7 of Megatron-LM, fetched from GitHub, final in Lena's pilot, with one comment."""
    project.scope = {"repository_ids": [repository.pk]}
    project.save(update_fields=["scope"])
    issue = make_issue(repository, 7, title="NCCL timeout", body="8 nodes, step 0")
    Comment.objects.create(issue=issue, forge_id="901", author="ann", body="Set NCCL_P2P_DISABLE")
    ProjectIssue.objects.create(project=project, issue=issue, position=0, status="final")
    return issue


@pytest.fixture
def bruno(db):
    return make_user("bruno-lead")


@pytest.fixture
def other_project(taxonomy_version, bruno) -> Project:
    other = Project.objects.create(name="Compiler bugs", taxonomy_version=taxonomy_version)
    Membership.objects.create(project=other, user=bruno, role=Role.LEAD, pseudonym="rater-b")
    return other


def run(project, user, name: str, data: bytes, kind: str, dry_run=False, source="uploads"):
    job = keep_file(project, user, name, data, kind, source, dry_run, True, True)
    tasks.run_upload(job.pk)
    job.refresh_from_db()
    return job


@pytest.mark.django_db
@pytest.mark.parametrize("dry_run", [True, False])
def test_a_lead_cannot_take_another_projects_repository_by_uploading_its_urls(
    bruno, other_project, repository, final_issue, upload_root, dry_run
):
    urls = (
        b"https://github.com/vllm-project/vllm/issues/1\n"
        b"https://github.com/NVIDIA/Megatron-LM/issues/7\n"
        b"https://github.com/NVIDIA/Megatron-LM/issues/8\n"
    )
    issues_before = Issue.objects.count()
    job = run(other_project, bruno, "urls.txt", urls, "urls", dry_run=dry_run)
    # vllm is stored nowhere, Megatron-LM for Lena's pilot: one answer for both (#28 L2).
    assert job.problems == [
        f"urls.txt, line {line}: url: repository github:{name}: {NOT_HIS}"
        for line, name in [
            (1, "vllm-project/vllm"),
            (2, "NVIDIA/Megatron-LM"),
            (3, "NVIDIA/Megatron-LM"),
        ]
    ]
    assert job.status == ("done" if dry_run else "failed")
    assert Issue.objects.count() == issues_before  # nothing imported, not even vllm#1
    assert not ProjectIssue.objects.filter(project=other_project).exists()
    other_project.refresh_from_db()
    assert repository.pk not in (other_project.scope or {}).get("repository_ids", [])
    assert not may_manage(bruno, repository)


@pytest.mark.django_db
def test_a_csv_row_of_a_repository_the_lead_does_not_manage_is_refused_on_its_line(
    bruno, other_project, repository, final_issue, upload_root
):
    data = (
        b"url,title\n"
        b"https://lists.example.org/ml/1,A thread\n"
        b"https://github.com/NVIDIA/Megatron-LM/issues/7,Rewritten\n"
    )
    job = run(other_project, bruno, "f.csv", data, "csv")
    assert job.status == "failed"
    assert job.problems == [f"f.csv, line 3: url: repository github:NVIDIA/Megatron-LM: {NOT_HIS}"]
    final_issue.refresh_from_db()
    assert final_issue.title == "NCCL timeout"
    assert not Issue.objects.filter(url="https://lists.example.org/ml/1").exists()


@pytest.mark.django_db
def test_an_upload_keeps_a_final_issue_as_it_is_and_links_it_into_the_queue(
    bruno, other_project, repository, final_issue, upload_root
):
    # Both projects use Megatron-LM, so Bruno manages it; its stored issues stay as they are.
    other_project.scope = {"repository_ids": [repository.pk]}
    other_project.save(update_fields=["scope"])
    record = {
        "url": "https://github.com/NVIDIA/Megatron-LM/issues/7",
        "title": "Rewritten title",
        "body": "rewritten body",
        "comments": [{"author": "mallory", "body": "planted", "created_at": None}],
    }
    data = json.dumps(record).encode()
    dry = run(other_project, bruno, "i.jsonl", data, "jsonl", dry_run=True)
    assert dry.problems == [] and dry.figures["kept_issues"] == 1
    assert (dry.figures["new_issues"], dry.figures["updated_issues"]) == (0, 0)
    assert ("kept_issues", "Issues already stored elsewhere (existing, kept as they are)", 1) in (
        dry.labeled_figures()
    )

    job = run(other_project, bruno, "i.jsonl", data, "jsonl")
    assert job.status == "done", job.problems
    assert (job.figures["kept_issues"], job.figures["added_to_queue"]) == (1, 1)
    final_issue.refresh_from_db()
    assert (final_issue.title, final_issue.body) == ("NCCL timeout", "8 nodes, step 0")
    assert list(final_issue.comments.values_list("body", flat=True)) == ["Set NCCL_P2P_DISABLE"]
    assert ProjectIssue.objects.filter(project=other_project, issue=final_issue).exists()


@pytest.mark.django_db
def test_two_projects_uploading_the_same_numbers_each_get_their_own_repository(
    lead, project, bruno, other_project, upload_root
):
    mine = b"url,number,title\nhttps://lists.example.org/ml/1,1,Lena's thread\n"
    theirs = b"url,number,title\nhttps://bugs.example.com/1,1,Bruno's bug\n"
    assert run(project, lead, "a.csv", mine, "csv").status == "done"
    assert run(other_project, bruno, "b.csv", theirs, "csv").status == "done"
    repos = Repository.objects.filter(forge="upload", name="uploads").order_by("pk")
    assert [r.owner for r in repos] == [f"uploaded-p{project.pk}", f"uploaded-p{other_project.pk}"]
    assert [r.issues.get(number="1").title for r in repos] == ["Lena's thread", "Bruno's bug"]

    # Lena's URL in Bruno's file is not his to rewrite, nor is he told it is stored: his
    # project gets its own issue of that URL, as for any new URL (#28 L2).
    steal = b"url,number,title\nhttps://lists.example.org/ml/1,2,Bruno was here\n"
    job = run(other_project, bruno, "c.csv", steal, "csv")
    assert job.status == "done" and job.problems == [] and job.figures["new_issues"] == 1
    lenas, brunos = Issue.objects.filter(url="https://lists.example.org/ml/1").order_by("pk")
    assert (lenas.title, brunos.title) == ("Lena's thread", "Bruno was here")
    assert brunos.repository == repos[1] and lenas.repository == repos[0]
    queued = set(ProjectIssue.objects.filter(project=other_project).values_list("issue", flat=True))
    assert brunos.pk in queued and lenas.pk not in queued
    assert not ProjectIssue.objects.filter(project=project, issue=brunos).exists()

    # Lena's own file again updates her own issue, as before.
    again = b"url,number,title\nhttps://lists.example.org/ml/1,1,Lena's thread (edited)\n"
    job = run(project, lead, "a.csv", again, "csv")
    assert job.status == "done" and job.figures["updated_issues"] == 1, job.problems
    lenas.refresh_from_db()
    assert lenas.title == "Lena's thread (edited)"


@pytest.mark.django_db
def test_an_admin_may_upload_urls_of_any_repository(
    other_project, repository, final_issue, upload_root, django_user_model
):
    admin = django_user_model.objects.create_superuser("ada-admin", password="x" * 12)
    urls = b"https://github.com/NVIDIA/Megatron-LM/issues/7\n"
    job = run(other_project, admin, "urls.txt", urls, "urls")
    assert job.status == "done" and job.problems == []
    assert job.figures["kept_issues"] == 1 and job.figures["added_to_queue"] == 1
    other_project.refresh_from_db()
    assert repository.pk in other_project.scope["repository_ids"]
    assert UploadJob.objects.get().requested_by == admin


@pytest.mark.django_db
def test_a_queued_job_of_a_deleted_account_never_runs_with_the_operators_rights(
    bruno, other_project, repository, final_issue, upload_root
):
    """Bruno's upload waits in the queue; his account is deleted before a worker takes it. The
    job goes with the account: it must not run later as if the operator had started it (a job
    without an uploader has every right), which would take Lena's repository."""
    urls = b"https://github.com/NVIDIA/Megatron-LM/issues/9\n"
    job = keep_file(other_project, bruno, "urls.txt", urls, "urls", "uploads", False, True, False)
    issues_before = Issue.objects.count()
    bruno.delete()
    assert not UploadJob.objects.filter(pk=job.pk).exists()
    tasks.run_upload(job.pk)  # the task, delivered after all
    assert Issue.objects.count() == issues_before
    other_project.refresh_from_db()
    assert repository.pk not in (other_project.scope or {}).get("repository_ids", [])


# --- #28 review, L2: one answer for "stored elsewhere" and "new" ---------------------------


def dry_run_as_seen(client, project, user, name: str, data: bytes, kind: str, names: dict):
    """The dry run's answer as the lead's page shows it (the job's fragment), with the job's
    number and time and the given item names replaced by placeholders."""
    job = run(project, user, name, data, kind, dry_run=True)
    UploadJob.objects.filter(pk=job.pk).update(created_at=FIXED_TIME)
    client.force_login(user)
    html = client.get(reverse("upload_job", args=[project.pk, job.pk])).content.decode()
    html = html.replace(f"#{job.pk} ", "#JOB ").replace(f"/{job.pk}/", "/JOB/")
    html = html.replace(f"upload-job-{job.pk}", "upload-job-JOB")
    for item, placeholder in names.items():
        html = html.replace(item, placeholder)
    return html


FIXED_TIME = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["urls", "csv"])
def test_a_repository_stored_for_another_project_is_answered_as_a_new_one(
    client, bruno, other_project, repository, final_issue, upload_root, kind
):
    def file(repo: str) -> bytes:
        url = f"https://github.com/{repo}/issues/7"
        return f"{url}\n".encode() if kind == "urls" else f"url,title\n{url},T\n".encode()

    stored, new = "NVIDIA/Megatron-LM", "acme-labs/never-stored"
    assert not Repository.objects.filter(owner="acme-labs").exists()
    answers = [
        dry_run_as_seen(client, other_project, bruno, "f", file(repo), kind, {repo: "REPO"})
        for repo in (stored, new)
    ]
    assert escape(NOT_HIS) in answers[0]
    assert answers[0] == answers[1]
    # The probe can tell answers apart: one of a repository Bruno's project uses differs.
    other_project.scope = {"repository_ids": [repository.pk]}
    other_project.save(update_fields=["scope"])
    usable = dry_run_as_seen(
        client, other_project, bruno, "f", file(stored), kind, {stored: "REPO"}
    )
    assert usable != answers[0] and NOT_HIS not in usable


@pytest.mark.django_db
def test_an_issue_url_stored_for_another_project_is_answered_as_a_new_one(
    client, lead, project, bruno, other_project, upload_root
):
    lenas = b"url,number,title\nhttps://lists.example.org/ml/1,1,Lena's thread\n"
    assert run(project, lead, "a.csv", lenas, "csv").status == "done"

    def file(url: str) -> bytes:
        return f"url,number,title\n{url},1,Bruno's copy\n".encode()

    stored, new = "https://lists.example.org/ml/1", "https://lists.example.org/ml/2"
    answers = [
        dry_run_as_seen(client, other_project, bruno, "b.csv", file(url), "csv", {url: "URL"})
        for url in (stored, new)
    ]
    assert "no problems" in answers[0]
    assert answers[0] == answers[1]
    # The probe can tell answers apart: Lena, whose repository holds the URL as issue 1, is told
    # so when her file gives it another number.
    taken = b"url,number,title\nhttps://lists.example.org/ml/1,2,Again\n"
    told = dry_run_as_seen(client, project, lead, "b.csv", taken, "csv", {})
    assert "already stored as issue" in told
    # Imported, Bruno's project gets an issue of its own; Lena's keeps its text and labels.
    job = run(other_project, bruno, "b.csv", file(stored), "csv")
    assert job.status == "done" and job.figures["new_issues"] == 1
    titles = Issue.objects.filter(url=stored).order_by("pk").values_list("title", flat=True)
    assert list(titles) == ["Lena's thread", "Bruno's copy"]
