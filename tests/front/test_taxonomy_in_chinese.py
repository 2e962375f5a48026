# ruff: noqa: RUF001 (the Chinese texts asserted use Chinese punctuation)
"""The taxonomy pages in the reader's language (issue #24): Chinese to a browser that asks for
it, English by default; the taxonomy's names and descriptions stay as the project wrote them."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from taxonomy.models import TaxonomyVersion

pytestmark = pytest.mark.django_db

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


def url(name, project, **kw):
    return reverse(name, kwargs={"project_id": project.pk, **kw})


def test_the_taxonomy_page_is_chinese_around_the_names_as_written(
    client, taxonomy_version, annotator
):
    client.force_login(annotator)
    page = f"/taxonomy/{taxonomy_version.pk}/"
    english = client.get(page).content.decode()
    assert "Three levels: issue type → theme → sub-theme." in english
    assert 'placeholder="Search names and details' in english

    html = client.get(page, **ZH).content.decode()
    assert '<html lang="zh-hans">' in html
    assert "三个层级：议题类型 → 主题 → 子主题。" in html
    assert 'placeholder="搜索名称和细节' in html and 'aria-label="搜索分类体系"' in html
    assert "Three levels" not in html
    # Data: the study's names are not translated.
    assert "Numerical Stability and Precision Management" in html

    fragment = client.get(f"{page}?q=PMIX spelling", HTTP_HX_REQUEST="true", **ZH)
    assert "1 个节点匹配 “PMIX spelling”。" in fragment.content.decode()
    nothing = client.get(f"{page}?q=zzzzqqq", HTTP_HX_REQUEST="true", **ZH).content.decode()
    assert "没有匹配项。请尝试更少或更短的词。" in nothing


def test_a_lead_edits_in_chinese_and_reads_the_difference_in_chinese(client, project, lead):
    client.force_login(lead)
    edit = client.get(url("taxonomy_edit", project), **ZH).content.decode()
    assert "<h1>编辑分类体系 <small>v1</small></h1>" in edit
    assert "把一个节点合并到另一个节点" in edit  # the operation's choice label

    v1 = project.taxonomy_version
    form = {"operation": "merge", "based_on": v1.pk, "node": "A.3", "other": "A.2"}
    response = client.post(url("taxonomy_edit", project), form, follow=True, **ZH)
    v2 = TaxonomyVersion.objects.get(parent=v1)
    assert response.redirect_chain[-1][0].endswith(f"?old={v1.pk}&new={v2.pk}")
    html = response.content.decode()
    assert '<span class="badge">合并</span>' in html
    assert "已合并到 A.2 Usage Gaps in LLM Operations" in html  # the names as written
    assert "was merged into" not in html
    # The same form again is stale, and says so in Chinese.
    again = client.post(url("taxonomy_edit", project), form, **ZH).content.decode()
    assert "本页面加载后项目的分类体系已经改变；请刷新后重试。" in again

    # The English reader of the same difference.
    diff = client.get(f"{url('taxonomy_diff', project)}?old={v1.pk}&new={v2.pk}")
    assert "was merged into A.2 Usage Gaps in LLM Operations" in diff.content.decode()


def test_a_broken_taxonomy_file_is_explained_in_chinese_with_its_json_path(client, project, lead):
    client.force_login(lead)
    bad = SimpleUploadedFile("t.json", b'{"format": "x"}', content_type="application/json")
    response = client.post(url("taxonomy_import", project), {"file": bad}, follow=True, **ZH)
    html = response.content.decode()
    assert "t.json: format: 必须为 &#x27;issue-annotator/taxonomy&#x27;" in html
    broken = SimpleUploadedFile("b.json", b'{\n  "format": \n}', content_type="application/json")
    response = client.post(url("taxonomy_import", project), {"file": broken}, follow=True, **ZH)
    assert "b.json: 第 3 行第 1 列" in response.content.decode()


def test_proposals_and_versions_pages_in_chinese(client, project, annotator, lead):
    client.force_login(annotator)
    proposals = client.get(url("taxonomy_proposals", project), **ZH).content.decode()
    assert "<h2>提议主题或子主题</h2>" in proposals and "没有开放的提议。" in proposals
    assert "促成该提议的议题" in proposals  # a form label
    client.force_login(lead)
    versions = client.get(url("taxonomy_versions", project), **ZH).content.decode()
    assert '<span class="badge ok">使用中</span>' in versions
    assert "<h2>导入分类体系文件</h2>" in versions
