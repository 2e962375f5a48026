"""A lead chooses whether taxonomy descriptions are shown in the reader's language: on, a reader
whose language is Simplified Chinese gets the study's Chinese descriptions on the labeling page
(its taxonomy panel's data); off, or in English, the descriptions as the project wrote them."""

import re

import pytest
from django.urls import reverse

from annotator.models import Project

pytestmark = pytest.mark.django_db

HAN = re.compile(r"[\u4e00-\u9fff]")


def panel_data(client, project, **headers) -> dict[str, dict]:
    """The labeling page's taxonomy data (descriptions and details) by node code."""
    url = reverse("label_taxonomy", args=[project.pk, project.taxonomy_version_id])
    response = client.get(url, **headers)
    assert response.status_code == 200
    return {node["code"]: node for node in response.json()["nodes"]}


def choose(project, on: bool) -> None:
    Project.objects.filter(pk=project.pk).update(translated_descriptions=on)


def test_on_a_chinese_reader_gets_the_chinese_descriptions(client, project, annotator):
    choose(project, True)
    client.force_login(annotator)
    nodes = panel_data(client, project, HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert nodes["A.1"]["description"] == "安装指引不清晰"
    assert nodes["C.3.i"]["description"] == "分布式通信与初始化缺陷"
    # The names stay as the study wrote them; the study wrote no English description, so
    # there is none to show beside.
    assert nodes["A.1"]["name"] == "Unclear Installation Guidance"
    assert "written_description" not in nodes["A.1"]
    assert all(HAN.search(n["description"]) for n in nodes.values())


def test_off_everyone_gets_the_descriptions_as_written(client, project, annotator):
    client.force_login(annotator)
    nodes = panel_data(client, project, HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert nodes["A.1"]["description"] == ""
    assert not any(HAN.search(n["description"]) for n in nodes.values())


def test_on_an_english_reader_gets_the_english(client, project, annotator):
    choose(project, True)
    client.force_login(annotator)
    nodes = panel_data(client, project, HTTP_ACCEPT_LANGUAGE="en")
    assert not any(HAN.search(n["description"]) for n in nodes.values())


def test_a_node_with_an_english_description_keeps_it_beside_the_chinese(client, project, annotator):
    choose(project, True)
    node = project.taxonomy_version.nodes.get(code="B.2.i")
    node.description = "Requests for new or changed APIs."
    node.save(update_fields=["description"])
    client.force_login(annotator)
    zh = panel_data(client, project, HTTP_ACCEPT_LANGUAGE="zh-hans")["B.2.i"]
    assert zh["description"] == "API 与接口需求"
    assert zh["written_description"] == "Requests for new or changed APIs."
    en = panel_data(client, project, HTTP_ACCEPT_LANGUAGE="en")["B.2.i"]
    assert en["description"] == "Requests for new or changed APIs."
    assert "written_description" not in en


def test_the_answer_varies_with_the_readers_language(client, project, annotator):
    # The browser keeps it for an hour: one language's copy must not serve another.
    choose(project, True)
    client.force_login(annotator)
    url = reverse("label_taxonomy", args=[project.pk, project.taxonomy_version_id])
    response = client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "Accept-Language" in response["Vary"]


def test_the_lead_chooses_it_on_the_setup_page(client, project, lead, annotator):
    url = reverse("project_setup", args=[project.pk])
    client.force_login(lead)
    page = client.get(url).content.decode()
    assert 'name="translated_descriptions"' in page
    settings = {"action": "settings", "annotations_per_issue": "3",
                "resolution_policy": "lead_decides", "majority_threshold": "0.6"}  # fmt: skip
    client.post(url, {**settings, "translated_descriptions": "1"})
    project.refresh_from_db()
    assert project.translated_descriptions is True
    # Left out (a script that posts K only), it keeps its value; "0" turns it off.
    client.post(url, settings)
    project.refresh_from_db()
    assert project.translated_descriptions is True
    client.post(url, {**settings, "translated_descriptions": "0"})
    project.refresh_from_db()
    assert project.translated_descriptions is False
    # Not an annotator's choice.
    client.force_login(annotator)
    assert client.post(url, {**settings, "translated_descriptions": "1"}).status_code == 404
    project.refresh_from_db()
    assert project.translated_descriptions is False


def test_the_setting_reads_in_chinese(client, project, lead):
    client.force_login(lead)
    page = client.get(
        reverse("project_setup", args=[project.pk]), HTTP_ACCEPT_LANGUAGE="zh-hans"
    ).content.decode()
    assert "分类体系说明" in page
    assert "在有译文时以读者的语言显示" in page


def test_switching_the_language_or_the_setting_gives_the_panel_a_new_url(
    client, project, annotator, issues_in_project
):
    # The browser keeps the panel's data for an hour by URL: either change must reach it at once.
    client.force_login(annotator)
    page = reverse("label_next", args=[project.pk])

    def data_url(**headers) -> str:
        html = client.get(page, follow=True, **headers).content.decode()
        (url,) = re.findall(r'id="taxonomy-details" data-url="([^"]+)"', html)
        return url

    english = data_url()
    chinese = data_url(HTTP_ACCEPT_LANGUAGE="zh-hans")
    choose(project, True)
    described = data_url(HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert len({english, chinese, described}) == 3
    assert client.get(described.replace("&amp;", "&")).status_code == 200
