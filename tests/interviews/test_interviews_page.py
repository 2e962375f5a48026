"""The interview page: members read it, leads and researchers change it, outsiders get 404."""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from interviews.models import CodebookEntry, Ranking
from labeling.models import ProjectIssue
from tests.builders import final_issue

pytestmark = pytest.mark.django_db

CSV = (
    "Participant,Type,Experience Level,Framework Context,Prompt Category,Thematic Quote,"
    "Linked Taxonomy Node(s),Research Insight\n"
    "U1,User,Beginner,PyTorch,Part II,Install took hours,A.1,Setup blocks beginners\n"
)


def url(name, project):
    return reverse(name, kwargs={"project_id": project.pk})


def test_outsider_gets_404(client, project, outsider):
    client.force_login(outsider)
    assert client.get(url("interviews", project)).status_code == 404
    assert client.get(url("codebook_export", project)).status_code == 404
    assert client.post(url("interviews", project), {"action": "ranking"}).status_code == 404


def test_annotator_reads_but_cannot_change(client, project, annotator):
    client.force_login(annotator)
    page = client.get(url("interviews", project))
    assert page.status_code == 200
    assert b"ranking-form" not in page.content
    form = {"participant": "U1", "kind": "user", "issue_type": "A", "themes": "A.1"}
    assert client.post(url("interviews", project), form).status_code == 404
    assert not Ranking.objects.exists()


def test_researcher_imports_codebook_and_records_rankings(
    client, project, researcher, issues_in_project
):
    item = ProjectIssue.objects.get(project=project, issue=issues_in_project[0])
    final_issue(project, item, "A.2.i", "A.2.i")
    client.force_login(researcher)
    upload = SimpleUploadedFile("codebook.csv", CSV.encode(), content_type="text/csv")
    client.post(url("interviews", project), {"action": "import", "file": upload})
    assert CodebookEntry.objects.get().quote == "Install took hours"

    bad = SimpleUploadedFile("bad.csv", CSV.replace("A.1,", "Q.7,").encode())
    response = client.post(
        url("interviews", project), {"action": "import", "file": bad}, follow=True
    )
    assert (
        "bad.csv, line 2, &#x27;Linked Taxonomy Node(s)&#x27;: no node" in response.content.decode()
    )

    form = {
        "action": "ranking",
        "participant": "U1",
        "issue_type": "A",
        "themes": "A.2, A.1, A.3",
    }
    response = client.post(url("interviews", project), form, follow=True)
    assert "Recorded U1" in response.content.decode()
    page = response.content.decode()
    # A.2: Borda 4 - 1 = 3 points; it is also the only final label.
    row = re.search(r'<tr data-theme="A.2">.*?</tr>', page, re.S).group(0)
    assert '<td class="num freq">1</td>' in row
    assert '<td class="num borda">3</td>' in row  # all participants
    assert '<td class="num mean-rank">1.00</td>' in row
    export = client.get(url("codebook_export", project))
    assert export.content.decode() == CSV


def test_rankings_file_upload_and_download(client, project, lead):
    text = "Participant,Type,Experience Level,Issue Type,Ranked Themes\nD1,Developer,,B,B.1 > B.2\n"
    client.force_login(lead)
    upload = SimpleUploadedFile("rankings.csv", text.encode(), content_type="text/csv")
    response = client.post(
        url("interviews", project), {"action": "import_rankings", "file": upload}, follow=True
    )
    assert "Imported 1 ranking." in response.content.decode()
    assert client.get(url("rankings_export", project)).content.decode() == text


def test_the_interview_page_in_chinese_and_a_bad_file_named_by_line_in_chinese(
    client, project, lead
):
    client.force_login(lead)
    english = client.get(url("interviews", project)).content.decode()
    assert "<h2>Priorities beside the issue data</h2>" in english

    zh = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
    html = client.get(url("interviews", project), **zh).content.decode()
    assert '<html lang="zh-hans">' in html
    assert "<h2>优先级与议题数据对照</h2>" in html and "<h2>导入编码本</h2>" in html
    assert "Participant,Type,Experience Level" in html  # the CSV's columns stay as they are
    assert 'data-group="users">用户 (0)</th>' in html  # the groups' names
    assert "Priorities beside the issue data" not in html

    bad = CSV.replace("A.1,Setup", "Z.9,Setup")
    upload = SimpleUploadedFile("bad.csv", bad.encode(), content_type="text/csv")
    response = client.post(
        url("interviews", project), {"action": "import", "file": upload}, follow=True, **zh
    )
    assert (
        "bad.csv, 第 2 行, &#x27;Linked Taxonomy Node(s)&#x27;: "
        f"{project.taxonomy_version} 中没有节点 &#x27;Z.9&#x27;"
    ) in response.content.decode()
    good = SimpleUploadedFile("good.csv", CSV.encode(), content_type="text/csv")
    response = client.post(
        url("interviews", project), {"action": "import", "file": good}, follow=True, **zh
    )
    assert "已导入 1 条编码本条目。" in response.content.decode()
    assert "<td>用户</td>" in response.content.decode()  # the participant's type, translated
