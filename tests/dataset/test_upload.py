"""Uploading issues in the browser (issue #24 item 3): Lena the lead uploads files of issues to
her project, previews them, dry-runs them and imports them; a broken line anywhere means
nothing is imported and the line is named; annotators, researchers and outsiders never see the
page."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotator import outbox
from dataset import tasks
from dataset.models import UploadJob
from dataset.uploads import keep_file
from ingest.models import Comment, Issue, Repository
from labeling.models import ProjectIssue

ROWS = 10_000
BROKEN = 5_000  # the data row (1-based) whose date is broken; the file's line is one more


def big_csv(broken: bool) -> bytes:
    """10,000 issues of a mailing-list archive; with `broken`, row BROKEN has a bad date."""
    lines = ["url,title,body,labels,created_at"]
    for n in range(1, ROWS + 1):
        date = "the day before" if broken and n == BROKEN else f"2024-01-{n % 28 + 1:02d}"
        lines.append(f"https://lists.example.org/ml/{n},Message {n},Body {n},ml; bug,{date}")
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture
def upload_root(settings, tmp_path):
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    return settings.UPLOAD_ROOT


@pytest.fixture
def run_tasks_here(monkeypatch):
    """The page queues the task on commit; run it in this process, as a worker would."""
    monkeypatch.setattr(outbox, "publish", lambda row_id: outbox.run_here(row_id))


def use(project, repository) -> None:
    """The project uses the repository (its scope names it), so its lead manages it."""
    project.scope = {"repository_ids": [repository.pk]}
    project.save(update_fields=["scope"])


def post(client, project, name: str, data: bytes, action: str, **fields):
    form = {"file": SimpleUploadedFile(name, data), "action": action, "source": "ml-archive"}
    form.update({"add_to_queue": "on", **fields})
    return client.post(reverse("upload_issues", args=[project.pk]), form)


@pytest.mark.django_db
def test_the_page_dry_runs_and_refuses_10000_rows_with_a_broken_line_then_imports_the_fixed_file(
    client, lead, project, upload_root, run_tasks_here, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    for action in ("dry_run", "import"):
        with django_capture_on_commit_callbacks(execute=True):
            response = post(client, project, "archive.csv", big_csv(broken=True), action)
        assert response.status_code == 302
        job = UploadJob.objects.get(dry_run=action == "dry_run")
        assert len(job.problems) == 1
        assert job.problems[0].startswith(f"archive.csv, line {BROKEN + 1}: created_at:")
        assert job.status == ("done" if action == "dry_run" else "failed")
        assert Issue.objects.count() == 0 and not Repository.objects.exists()
        assert ProjectIssue.objects.filter(project=project).count() == 0
        page = client.get(response.url).content.decode()
        assert f"line {BROKEN + 1}: created_at" in page
    assert list(upload_root.iterdir()) == []  # every kept file deleted after its task

    with django_capture_on_commit_callbacks(execute=True):
        post(client, project, "archive.csv", big_csv(broken=False), "import")
    job = UploadJob.objects.filter(dry_run=False).first()
    assert job is not None and job.status == "done" and job.problems == []
    assert job.figures["issues"] == ROWS and job.figures["added_to_queue"] == ROWS
    repository = Repository.objects.get(
        forge="upload", owner=f"uploaded-p{project.pk}", name="ml-archive"
    )
    assert repository.issues.count() == ROWS
    issue = repository.issues.get(url=f"https://lists.example.org/ml/{BROKEN}")
    assert (issue.title, issue.labels) == (f"Message {BROKEN}", ["ml", "bug"])
    queue = ProjectIssue.objects.filter(project=project).order_by("position")
    assert queue.count() == ROWS and queue.first().issue.title == "Message 1"
    assert repository.pk in project.__class__.objects.get(pk=project.pk).scope["repository_ids"]


@pytest.mark.django_db
def test_the_task_refuses_the_broken_file_and_imports_nothing(lead, project, upload_root):
    job = keep_file(
        project, lead, "archive.csv", big_csv(broken=True), "csv", "ml", False, True, False
    )
    tasks.run_upload(job.pk)
    job.refresh_from_db()
    assert job.status == "failed" and job.figures == {}
    assert job.problems == [
        f"archive.csv, line {BROKEN + 1}: created_at: 'the day before' is not an ISO 8601 date "
        "(2024-05-01T12:00Z)"
    ]
    assert not Issue.objects.exists() and not ProjectIssue.objects.exists()
    assert job.file_path == "" and list(upload_root.iterdir()) == []
    tasks.run_upload(job.pk)  # again: a job that ended is left as it is
    job.refresh_from_db()
    assert job.status == "failed" and not Issue.objects.exists()


@pytest.mark.django_db
def test_a_dry_run_of_a_good_file_counts_what_an_import_would_store_and_stores_nothing(
    lead, project, upload_root
):
    job = keep_file(project, lead, "a.csv", big_csv(broken=False), "csv", "ml", True, True, False)
    tasks.run_upload(job.pk)
    job.refresh_from_db()
    assert job.status == "done" and job.problems == []
    assert job.figures["new_issues"] == ROWS and job.figures["new_repositories"] == 1
    assert not Issue.objects.exists()


@pytest.mark.django_db
def test_a_json_lines_file_with_comments_goes_to_its_forge_and_to_the_upload_repository(
    lead, project, repository, upload_root
):
    records = [
        {
            "url": "https://github.com/NVIDIA/Megatron-LM/issues/42",
            "title": "NCCL timeout at step 0",
            "body": "8 nodes",
            "state": "closed",
            "labels": ["bug"],
            "created_at": "2024-02-01T08:00:00+00:00",
            "comments": [{"author": "ann", "body": "Set NCCL_P2P_DISABLE", "created_at": None}],
        },
        {"url": "https://tracker.example.org/T-9", "title": "vLLM OOM", "number": "T-9"},
    ]
    data = "\n".join(json.dumps(r) for r in records).encode()
    use(project, repository)  # Lena manages the forge repository her project uses
    job = keep_file(project, lead, "issues.jsonl", data, "jsonl", "tracker", False, True, False)
    tasks.run_upload(job.pk)
    job.refresh_from_db()
    assert job.status == "done", job.problems
    forge_issue = Issue.objects.get(repository=repository, number="42")  # the existing repo
    assert (forge_issue.state, forge_issue.comments_count) == ("closed", 1)
    assert Comment.objects.get(issue=forge_issue).body == "Set NCCL_P2P_DISABLE"
    other = Issue.objects.get(url="https://tracker.example.org/T-9")
    assert (other.repository.forge, other.repository.name, other.number) == (
        "upload",
        "tracker",
        "T-9",
    )
    assert ProjectIssue.objects.filter(project=project).count() == 2

    # The same file again updates the issue of the project's upload repository; the forge
    # issue, stored now, is kept as it is (#24 H2): no second issue, no second comment.
    again = keep_file(project, lead, "issues.jsonl", data, "jsonl", "tracker", False, True, False)
    tasks.run_upload(again.pk)
    again.refresh_from_db()
    assert (again.figures["updated_issues"], again.figures["kept_issues"]) == (1, 1)
    assert again.figures["added_to_queue"] == 0
    assert Issue.objects.count() == 2 and Comment.objects.count() == 1


@pytest.mark.django_db
def test_a_url_list_makes_issues_known_by_url_in_the_forges_repository(
    client, lead, project, upload_root, run_tasks_here, django_capture_on_commit_callbacks
):
    urls = "\n".join(
        [
            "https://github.com/vllm-project/vllm/issues/1",
            "https://gitee.com/mindspore/mindspore/issues/IBD6YU",
            "https://github.com/vllm-project/vllm/issues/1",  # a repeat is one issue
        ]
    )
    # Lena added both repositories for her project first (the Repositories page); an upload
    # takes only repositories the project uses (docs/SECURITY.md, #28 L2).
    added = [
        Repository.objects.create(forge=forge, api_url=Repository.DEFAULT_API_URLS[forge],
                                  owner=owner, name=name)
        for forge, owner, name in [("github", "vllm-project", "vllm"),
                                   ("gitee", "mindspore", "mindspore")]
    ]  # fmt: skip
    project.scope = {"repository_ids": [repo.pk for repo in added]}
    project.save(update_fields=["scope"])
    client.force_login(lead)
    with django_capture_on_commit_callbacks(execute=True):
        post(client, project, "urls.txt", urls.encode(), "import")
    job = UploadJob.objects.get()
    assert job.kind == "urls" and job.status == "done", job.problems
    assert sorted(Issue.objects.values_list("url", flat=True)) == [
        "https://gitee.com/mindspore/mindspore/issues/IBD6YU",
        "https://github.com/vllm-project/vllm/issues/1",
    ]
    assert not Issue.objects.filter(fetched_at__isnull=False).exists()  # fetched later
    assert ProjectIssue.objects.filter(project=project).count() == 2


@pytest.mark.django_db
def test_a_url_already_stored_as_another_issue_is_a_problem_on_its_line(
    lead, project, repository, upload_root
):
    Issue.objects.create(repository=repository, number="5", url="https://example.org/taken")
    use(project, repository)  # named because Lena manages it (another's is not named)
    data = b"url,title\nhttps://example.org/free,A\nhttps://example.org/taken,B\n"
    job = keep_file(project, lead, "f.csv", data, "csv", "ml", False, True, False)
    tasks.run_upload(job.pk)
    job.refresh_from_db()
    assert job.status == "failed"
    assert job.problems == [
        "f.csv, line 3: url: already stored as issue github:NVIDIA/Megatron-LM#5"
    ]
    assert Issue.objects.count() == 1


@pytest.mark.django_db
def test_the_preview_shows_the_first_rows_and_escapes_hostile_titles(client, lead, project):
    hostile = '=HYPERLINK("https://evil.example","click")'
    data = (
        "url,title\n"
        f'https://example.org/1,"{hostile.replace(chr(34), chr(34) * 2)}"\n'
        "https://example.org/2,<script>alert('x')</script>\n"
        "javascript:alert(1),<img src=x onerror=alert(1)>\n"
    ).encode()
    client.force_login(lead)
    response = post(client, project, "h.csv", data, "preview", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and 'id="preview-table"' in html
    assert (
        "<script>alert" not in html and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    )
    assert "=HYPERLINK(&quot;https://evil.example&quot;,&quot;click&quot;)" in html
    assert "<img src=x" not in html and "h.csv, line 4: url:" in html
    assert not UploadJob.objects.exists()  # a preview keeps nothing


@pytest.mark.django_db
def test_hostile_titles_are_stored_as_text_and_shown_escaped_on_the_issue_list(
    client, lead, project, upload_root
):
    data = b"url,title\nhttps://example.org/1,<b onmouseover=alert(1)>=cmd|' /C calc'!A0</b>\n"
    job = keep_file(project, lead, "h.csv", data, "csv", "ml", False, True, False)
    tasks.run_upload(job.pk)
    client.force_login(lead)
    html = client.get(reverse("issue_list", args=[project.pk])).content.decode()
    assert "&lt;b onmouseover=alert(1)&gt;=cmd|&#x27; /C calc&#x27;!A0&lt;/b&gt;" in html
    assert "<b onmouseover" not in html


@pytest.mark.django_db
def test_the_progress_fragment_polls_while_the_job_runs_and_stops_when_it_is_done(
    client, lead, project
):
    job = UploadJob.objects.create(
        project=project, file_name="big.csv", kind="csv", source="ml", dry_run=False,
        status="running", progress=40, step="reading",
    )  # fmt: skip
    client.force_login(lead)
    url = reverse("upload_job", args=[project.pk, job.pk])
    running = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert 'hx-trigger="every 1s"' in running and "40%" in running and "reading" in running
    UploadJob.objects.filter(pk=job.pk).update(
        status="done", progress=100, figures={"issues": 3, "new_issues": 3, "comments": 0}
    )
    done = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "hx-trigger" not in done and "imported" in done
    assert '<dd data-figure="new_issues">3</dd>' in done and 'data-figure="comments"' not in done


@pytest.mark.django_db
@pytest.mark.parametrize("persona", ["annotator", "researcher", "outsider"])
def test_only_leads_and_admins_reach_the_upload_page(
    client, request, persona, lead, project, upload_root
):
    job = UploadJob.objects.create(project=project, file_name="a.csv", kind="csv", source="ml")
    urls = [
        reverse("upload_issues", args=[project.pk]),
        reverse("upload_job", args=[project.pk, job.pk]),
    ]
    client.force_login(lead)  # the probe can fire: the lead gets the pages
    assert [client.get(u).status_code for u in urls] == [200, 200]
    client.force_login(request.getfixturevalue(persona))
    assert [client.get(u).status_code for u in urls] == [404, 404]
    response = post(client, project, "a.csv", b"url,title\nhttps://example.org/1,A\n", "import")
    assert response.status_code == 404 and UploadJob.objects.count() == 1


@pytest.mark.django_db
def test_a_superuser_is_admitted_as_a_project_admin(client, project, django_user_model):
    admin = django_user_model.objects.create_superuser("ada-admin", password="x" * 12)
    client.force_login(admin)
    assert client.get(reverse("upload_issues", args=[project.pk])).status_code == 200


@pytest.mark.django_db
def test_bad_input_is_refused_naming_the_field(client, lead, project, settings):
    settings.MAX_UPLOAD_BYTES = 10
    client.force_login(lead)
    response = post(client, project, "a.csv", b"url,title\nhttps://example.org/1,A\n", "import")
    # The site's input limit answers first, before the file is read: 413 naming the setting.
    assert response.status_code == 413 and "MAX_UPLOAD_BYTES" in response.content.decode()
    settings.MAX_UPLOAD_BYTES = 10 * 1024 * 1024
    response = post(client, project, "a.csv", b"x", "import", source="a/b")
    assert response.status_code == 400 and "no slash" in response.content.decode()
    response = post(client, project, "a.csv", b"x", "explode")
    assert response.status_code == 400 and 'data-field="action"' in response.content.decode()
    assert not UploadJob.objects.exists()


@pytest.mark.django_db
def test_the_command_runs_the_same_job_and_names_the_broken_line(
    lead, project, upload_root, tmp_path
):
    path = tmp_path / "archive.csv"
    path.write_bytes(
        b"url,title,created_at\nhttps://example.org/1,A,2024-01-01\nhttps://example.org/2,B,soon\n"
    )
    with pytest.raises(CommandError, match="1 problem"):
        call_command("upload_issues", str(project.pk), str(path))
    assert not Issue.objects.exists()
    assert UploadJob.objects.get().problems[0].startswith("archive.csv, line 3: created_at")


@pytest.mark.django_db
def test_the_project_page_links_the_upload_page_for_its_lead_only(client, lead, annotator, project):
    url = reverse("upload_issues", args=[project.pk])
    client.force_login(lead)
    assert url in client.get(reverse("project_detail", args=[project.pk])).content.decode()
    client.force_login(annotator)
    assert url not in client.get(reverse("project_detail", args=[project.pk])).content.decode()


@pytest.mark.django_db
def test_the_uploaded_repository_is_listed_for_the_lead_but_never_synced(
    client, lead, project, upload_root
):
    data = b"url,title\nhttps://lists.example.org/ml/1,A thread\n"
    job = keep_file(project, lead, "a.csv", data, "csv", "ml-archive", False, True, False)
    tasks.run_upload(job.pk)
    repository = Repository.objects.get(forge="upload")
    client.force_login(lead)
    page = client.get(reverse("repositories")).content.decode()
    assert "ml-archive" in page and "uploaded: nothing to sync" in page
    response = client.post(reverse("repository_sync", args=[repository.pk]))
    assert response.status_code == 302 and not repository.sync_runs.exists()
    new_form = page.split('id="id_forge"', 1)[1].split("</select>", 1)[0]
    assert 'value="github"' in new_form and 'value="upload"' not in new_form  # only by upload
    edit = client.get(reverse("repository_edit", args=[repository.pk])).content.decode()
    assert 'value="upload" selected' in edit


@pytest.mark.django_db
def test_uploaded_issues_go_into_an_export_with_their_own_urls(
    lead, project, upload_root, tmp_path
):
    import zipfile

    from dataset.exports import build_zip

    data = b'url,title\nhttps://lists.example.org/ml/1,"=HYPERLINK(""x"")"\n'
    job = keep_file(project, lead, "a.csv", data, "csv", "ml-archive", False, True, False)
    tasks.run_upload(job.pk)
    build_zip(project, tmp_path / "e.zip", everything=True)
    with zipfile.ZipFile(tmp_path / "e.zip") as archive:
        names = archive.namelist()
        study_csv = [n for n in names if n.endswith(".csv") and "ml-archive" in n]
        jsonl = archive.read(next(n for n in names if n.endswith(".jsonl"))).decode()
        assert "https://lists.example.org/ml/1," in archive.read(study_csv[0]).decode("utf-8-sig")
    record = json.loads(jsonl.splitlines()[0])
    assert (record["url"], record["forge"], record["title"]) == (
        "https://lists.example.org/ml/1",
        "upload",
        '=HYPERLINK("x")',
    )


@pytest.mark.django_db
def test_without_add_to_queue_the_issues_are_stored_but_not_queued(lead, project, upload_root):
    data = b"url,title\nhttps://lists.example.org/ml/1,A thread\n"
    job = keep_file(project, lead, "a.csv", data, "csv", "ml", False, False, False)
    tasks.run_upload(job.pk)
    assert Issue.objects.filter(url="https://lists.example.org/ml/1").exists()
    assert not ProjectIssue.objects.filter(project=project).exists()
