# ruff: noqa: RUF001 -- the expected texts are Chinese, with its full-width punctuation
"""The dataset pages in Simplified Chinese (issue #24): Lena the lead, whose browser asks for
zh-Hans, reads the upload page, its preview and dry run with every problem named by its line
(the line number and the field name as the file has them), and the releases page with a refused
version beside its field; without the header every page stays English."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotator import outbox
from dataset.models import UploadJob

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
# Line 3 of the file has a date that is not ISO 8601; line 4 has no URL.
BROKEN = (
    b"url,title,created_at\n"
    b"https://lists.example.org/ml/1,First,2024-05-01\n"
    b"https://lists.example.org/ml/2,Second,the day before\n"
    b",Third,2024-05-03\n"
)


@pytest.fixture
def upload_root(settings, tmp_path):
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    return settings.UPLOAD_ROOT


@pytest.fixture
def run_tasks_here(monkeypatch):
    """The page queues the task on commit; run it in this process, as a worker would."""
    monkeypatch.setattr(outbox, "publish", lambda row_id: outbox.run_here(row_id))


def upload(client, project, action: str, **headers):
    form = {
        "file": SimpleUploadedFile("archive.csv", BROKEN),
        "action": action,
        "source": "ml-archive",
        "add_to_queue": "on",
    }
    return client.post(reverse("upload_issues", args=[project.pk]), form, **headers)


@pytest.mark.django_db
def test_the_upload_page_is_chinese_for_a_chinese_browser_and_english_otherwise(
    client, lead, project
):
    client.force_login(lead)
    url = reverse("upload_issues", args=[project.pk])
    chinese = client.get(url, **ZH).content.decode()
    assert '<html lang="zh-hans"' in chinese
    assert "<title>上传议题 · LLM issues pilot" in chinese
    assert ">试运行</button>" in chinese and ">导入</button>" in chinese
    assert "尚无上传。" in chinese and "返回项目" in chinese
    assert ">文件</label>" in chinese  # the form's own labels too
    english = client.get(url).content.decode()
    assert "Upload issues · LLM issues pilot" in english and ">Dry run</button>" in english
    assert "No upload yet." in english and "试运行" not in english


@pytest.mark.django_db
def test_the_preview_names_each_problem_by_line_and_field_in_chinese(
    client, lead, project, upload_root
):
    client.force_login(lead)
    response = upload(client, project, "preview", HTTP_HX_REQUEST="true", **ZH)
    assert response.status_code == 200
    fragment = response.content.decode()
    assert "这些行中的问题：" in fragment
    # The file's name, its line number and the column stay as the file has them.
    assert "archive.csv，第 3 行: created_at: &#x27;the day before&#x27; 不是 ISO 8601 日期" in (
        fragment
    )
    assert "archive.csv，第 4 行: url: 为空" in fragment
    english = upload(client, project, "preview", HTTP_HX_REQUEST="true").content.decode()
    assert "archive.csv, line 4: url: empty" in english and "第 4 行" not in english


@pytest.mark.django_db
def test_a_dry_run_asked_in_chinese_lists_its_problems_in_chinese(
    client, lead, project, upload_root, run_tasks_here, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client, project, "dry_run", **ZH)
    assert response.status_code == 302
    job = UploadJob.objects.get()
    # Written by the task in the uploader's language, as the page showed it when queued.
    assert job.problems == [
        "archive.csv，第 3 行: created_at: 'the day before' 不是 ISO 8601 日期"
        "（2024-05-01T12:00Z）",
        "archive.csv，第 4 行: url: 为空",
    ]
    page = client.get(response.url, **ZH).content.decode()
    assert f"试运行 #{job.pk}：<strong>archive.csv</strong>（CSV）" in page
    assert "2 个问题</span> 导入将不会存储任何内容：" in page
    assert "<li>archive.csv，第 4 行: url: 为空</li>" in page
    # The same job read in English: the page's words are English, the stored problems as written.
    english = client.get(response.url).content.decode()
    assert f"Dry run #{job.pk} of <strong>archive.csv</strong> (CSV)" in english
    assert "2 problems</span> an import would store nothing:" in english


@pytest.mark.django_db
def test_a_dry_run_asked_in_english_lists_its_problems_in_english(
    client, lead, project, upload_root, run_tasks_here, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    with django_capture_on_commit_callbacks(execute=True):
        upload(client, project, "dry_run")
    assert UploadJob.objects.get().problems == [
        "archive.csv, line 3: created_at: 'the day before' is not an ISO 8601 date "
        "(2024-05-01T12:00Z)",
        "archive.csv, line 4: url: empty",
    ]


@pytest.mark.django_db
def test_each_reader_reads_a_jobs_problems_in_their_own_language(
    client, lead, project, upload_root, run_tasks_here, django_capture_on_commit_callbacks
):
    """Lena queued the dry run in Chinese; read in English (her colleague, or a job of the
    command line) the same problems are English, and in Chinese still Chinese (issue #28)."""
    client.force_login(lead)
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client, project, "dry_run", **ZH)
    english = client.get(response.url).content.decode()
    assert "<li>archive.csv, line 4: url: empty</li>" in english
    assert "第 4 行" not in english and "为空" not in english
    chinese = client.get(response.url, **ZH).content.decode()
    assert "<li>archive.csv，第 4 行: url: 为空</li>" in chinese
    # A job stored before the problems were kept per language is read as it was written.
    job = UploadJob.objects.get()
    UploadJob.objects.filter(pk=job.pk).update(problems_by_language={})
    assert "<li>archive.csv，第 4 行: url: 为空</li>" in client.get(response.url).content.decode()


@pytest.mark.django_db
def test_the_releases_page_and_a_refused_version_are_chinese(client, lead, project):
    client.force_login(lead)
    url = reverse("releases", args=[project.pk])
    page = client.get(url, **ZH).content.decode()
    assert "<title>发布版本 · LLM issues pilot" in page
    assert ">冻结发布版本</button>" in page and "尚无发布版本。" in page
    assert "语义化版本号 MAJOR.MINOR.PATCH，须大于最新的发布版本。" in page  # the field's help
    refused = client.post(url, {"version": "v1", "title": "T", "licence": "CC-BY-4.0"}, **ZH)
    assert refused.status_code == 400
    error = refused.content.decode()
    assert 'data-field="version">“v1”不是语义化版本号 MAJOR.MINOR.PATCH' in error
    english = client.post(url, {"version": "v1", "title": "T", "licence": "CC-BY-4.0"})
    assert "“v1” is not a semantic version MAJOR.MINOR.PATCH" in english.content.decode()
    assert "Freeze release" in client.get(url).content.decode()
