# ruff: noqa: RUF001 -- the expected texts are Chinese, with its full-width punctuation
"""The machine raters page in Simplified Chinese (issue #24): Lena the lead, whose browser asks
for zh-Hans, reads the page, adds a rater and is told in Chinese when its name is taken; a
run's state is Chinese too. Without the header the page stays English."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import MachineRater
from raters.models import RaterRun

pytestmark = pytest.mark.django_db

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


def test_the_raters_page_is_chinese_for_a_chinese_browser(client, project, lead):
    client.force_login(lead)
    url = reverse("raters_page", args=[project.pk])
    page = client.get(url, **ZH).content.decode()
    assert "<title>机器评分者 · LLM issues pilot" in page
    assert "尚无机器评分者。" in page and "<h2>添加评分者</h2>" in page
    assert ">添加评分者</button>" in page
    assert "基于项目最终标注训练的分类器" in page  # the kinds' labels in the select
    english = client.get(url).content.decode()
    assert "No machine rater yet." in english and "机器评分者" not in english


def test_adding_a_rater_and_a_taken_name_are_told_in_chinese(client, project, lead):
    client.force_login(lead)
    url = reverse("rater_add", args=[project.pk])
    added = client.post(url, {"name": "tfidf", "kind": "classifier"}, follow=True, **ZH)
    assert "已添加评分者 tfidf。" in added.content.decode()
    taken = client.post(url, {"name": "tfidf", "kind": "classifier"}, **ZH)
    assert taken.status_code == 400
    assert "此项目已有名为 &#x27;tfidf&#x27; 的评分者" in taken.content.decode()
    assert MachineRater.objects.count() == 1


def test_a_queued_run_reads_in_chinese(client, project, lead):
    rater = MachineRater.objects.create(project=project, name="tfidf", kind="classifier")
    run = RaterRun.objects.create(rater=rater, only=RaterRun.Scope.FINAL, total=60)
    client.force_login(lead)
    url = reverse("rater_run_status", args=[project.pk, run.pk])
    fragment = client.get(url, **ZH).content.decode()
    assert f"运行 #{run.pk}：<strong>tfidf</strong>（已定稿的议题）" in fragment
    assert '<span class="badge warn">已排队</span>' in fragment
    english = client.get(url).content.decode()
    assert f"Run #{run.pk} of <strong>tfidf</strong> (final issues)" in english
