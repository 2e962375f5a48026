# ruff: noqa: RUF001 -- the expected texts are Chinese, with its full-width punctuation
"""The ingest pages in Simplified Chinese (issue #24): a lead whose browser asks for zh-Hans
reads the repositories page, adds a repository (the message and a refused field in Chinese),
and watches a sync run's state; a file's problems keep their line numbers and field names.
Without the header they stay English."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import translation

from ingest.issue_files import read_issue_file
from ingest.models import Repository, SyncRun

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


@pytest.mark.django_db
def test_the_repositories_page_and_adding_one_are_chinese(client, project, lead):
    client.force_login(lead)
    url = reverse("repositories")
    page = client.get(url, **ZH).content.decode()
    assert "<title>仓库" in page and "<h2>添加仓库</h2>" in page
    assert '<label for="id_forge">代码托管平台' in page  # the form's labels
    response = client.post(
        url,
        {
            "forge": "gitee",
            "owner": "ascend",
            "name": "MindSpeed",
            "sync_interval_hours": "0",
            "project": project.pk,
        },
        follow=True,
        **ZH,
    )
    page = response.content.decode()
    assert "已为 LLM issues pilot 添加 gitee:ascend/MindSpeed。" in page
    assert "从未" in page and ">同步</button>" in page  # never synced yet
    english = client.get(url).content.decode()
    assert "<h2>Add a repository</h2>" in english and "never" in english and "从未" not in english


@pytest.mark.django_db
def test_a_refused_api_url_is_explained_in_chinese(client, project, lead):
    client.force_login(lead)
    response = client.post(
        reverse("repositories"),
        {
            "forge": "github",
            "owner": "o",
            "name": "n",
            "api_url": "https://internal.example/api",
            "sync_interval_hours": "0",
            "project": project.pk,
        },
        **ZH,
    )
    assert response.status_code == 200  # the form again, with its error
    assert "不是服务器可以访问的 API URL：" in response.content.decode()
    assert not Repository.objects.filter(owner="o").exists()


@pytest.mark.django_db
def test_a_sync_runs_state_is_chinese(client, project, lead, repository):
    project.scope = {"repository_ids": [repository.pk]}
    project.save(update_fields=["scope"])
    run = SyncRun.objects.create(repository=repository)
    client.force_login(lead)
    page = client.get(reverse("sync_run", args=[run.pk]), **ZH).content.decode()
    assert f"<title>同步 {run.pk}" in page and "NVIDIA/Megatron-LM 的同步" in page
    assert 'id="run-state">已排队</strong> · 正在等待工作进程启动。' in page
    assert 'aria-label="同步进度"' in page and "全部议题" in page
    english = client.get(reverse("sync_run", args=[run.pk])).content.decode()
    assert 'id="run-state">Queued</strong>' in english and 'aria-label="sync progress"' in english


def test_a_files_problems_keep_their_line_numbers_and_field_names_in_chinese():
    data = b'{"url": "https://github.com/o/n/pull/1", "title": "A"}\n[1]\n{"title": ""}\n'
    with translation.override("zh-hans"):
        problems = read_issue_file("issues.jsonl", data).problems
    assert problems == [
        "issues.jsonl，第 1 行: url: 不是 github 议题 URL: 'https://github.com/o/n/pull/1'",
        "issues.jsonl，第 2 行: 不是 JSON 对象",
        "issues.jsonl，第 3 行: url: 为空",
        "issues.jsonl，第 3 行: title: 为空",
    ]
    assert read_issue_file("issues.jsonl", data).problems[2] == "issues.jsonl, line 3: url: empty"
