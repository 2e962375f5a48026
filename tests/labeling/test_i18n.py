# ruff: noqa: RUF001  (Chinese text is written with full-width punctuation)
"""The labeling app speaks the reader's language (issue #24): Lee (lead) and Ada (annotator)
read its form errors, refusals and flash messages in Simplified Chinese when their browser asks
for it, and in English otherwise. Field names (`min_labels`, `theme`, `status`) stay as they are
in every language: they name the field at fault, as the API does."""

import html

import pytest
from django.urls import reverse
from django.utils import translation

from labeling.guideline import MAX_GUIDELINE_CHARS
from labeling.issue_context import _render_many, label_choices
from labeling.models import Annotation
from tests.labeling.conftest import label_data

pytestmark = pytest.mark.one_path  # neither the queue's nor the submission's path is under test

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


def _text(response) -> str:
    return html.unescape(response.content.decode())


def _setup(client, project, language: dict, **changes):
    data = {
        "action": "settings",
        "annotations_per_issue": "5",
        "resolution_policy": "lead_decides",
        "majority_threshold": "0.6",
        "stopping_rule": "adaptive",
        "min_labels": "2",
        "lead_margin": "2",
    }
    url = reverse("project_setup", args=[project.pk])
    return client.post(url, data | changes, follow=True, **language)


@pytest.mark.parametrize(
    ("language", "refused_by_form", "refused_by_setup", "saved"),
    [
        (
            ZH,
            "未保存：min_labels: 1 到 K 之间的整数",
            "未保存：min_labels: 介于 1 和 K（5）之间",
            "设置已保存。",
        ),
        (
            {},
            "Not saved: min_labels: a whole number from 1 to K",
            "Not saved: min_labels: between 1 and K (5)",
            "Settings saved.",
        ),
    ],
    ids=["zh-hans", "english-by-default"],
)
def test_the_lead_reads_the_setup_pages_refusals_and_confirmation_in_the_browsers_language(
    client, lead, project, language, refused_by_form, refused_by_setup, saved
):
    client.force_login(lead)
    # Refused by the form (its error message is made once, at import, and read in Chinese
    # only when shown), then by `setup.configure`, then saved.
    assert refused_by_form in _text(_setup(client, project, language, min_labels="0"))
    assert refused_by_setup in _text(_setup(client, project, language, min_labels="6"))
    project.refresh_from_db()
    assert project.stopping_rule == "fixed"
    assert saved in _text(_setup(client, project, language))
    project.refresh_from_db()
    assert (project.stopping_rule, project.min_labels) == ("adaptive", 2)


@pytest.mark.parametrize(
    ("language", "too_long", "saved"),
    [
        (ZH, "标注指南过长：最多 20,000 个字符（当前为 20001 个）。", "标注指南已保存。"),
        (
            {},
            "The guideline is too long: at most 20,000 characters (it has 20001).",
            "Guideline saved.",
        ),
    ],
    ids=["zh-hans", "english-by-default"],
)
def test_a_too_long_guideline_is_refused_and_a_fitting_one_saved_in_the_browsers_language(
    client, lead, project, language, too_long, saved
):
    client.force_login(lead)
    url = reverse("project_guideline", args=[project.pk])
    refused = client.post(url, {"guideline": "x" * (MAX_GUIDELINE_CHARS + 1)}, **language)
    assert refused.status_code == 400
    # The validator's own figure (20001) is filled into the translated message.
    assert too_long in _text(refused)
    done = client.post(url, {"guideline": "Pick the deepest theme."}, follow=True, **language)
    assert saved in _text(done)
    project.refresh_from_db()
    assert project.guideline == "Pick the deepest theme."


def test_an_annotators_refused_label_is_explained_in_chinese(client, annotator, project, items):
    client.force_login(annotator)
    url = client.get(reverse("label_next", args=[project.pk])).url
    wrong_theme = label_data(project, "C.3") | {"theme": label_data(project, "A.1")["theme"]}
    response = client.post(url, wrong_theme, **ZH)
    assert response.status_code == 400
    text = _text(response)
    assert 'data-field="theme"' in text
    assert "A.1 不是 C 的主题" in text
    assert "is not a theme of" not in text
    english = _text(client.post(url, wrong_theme))
    assert "A.1 is not a theme of C" in english
    assert not Annotation.objects.exists()


def test_a_bad_issue_list_filter_is_named_in_chinese(client, researcher, project):
    client.force_login(researcher)
    url = reverse("issue_list", args=[project.pk])
    refused = client.get(url, {"status": "bogus"}, **ZH)
    assert refused.status_code == 400
    assert "不是 status 的选项之一" in _text(refused)
    assert "not one of the status choices" in _text(client.get(url, {"status": "bogus"}))


def test_the_project_page_names_the_labeling_links_in_the_readers_language(
    client, annotator, project
):
    client.force_login(annotator)
    url = reverse("project_detail", args=[project.pk])
    chinese, english = _text(client.get(url, **ZH)), _text(client.get(url))
    assert "标注下一个议题" in chinese and "我的进度" in chinese
    assert "Label next issue" not in chinese
    assert "Label next issue" in english and "标注下一个议题" not in english


def test_an_issue_images_button_is_worded_in_each_readers_language_despite_the_cache(db):
    body = "![a chart](https://example.org/chart.png)"
    # English first: its rendering is cached, and must not be served to a Chinese reader.
    with translation.override("en"):
        (english,) = _render_many([body])
    with translation.override("zh-hans"):
        (chinese,) = _render_many([body])
    with translation.override("en"):
        (again,) = _render_many([body])
    assert "Load image: a chart" in english and english == again
    assert "加载图片：a chart" in chinese and "Load image" not in chinese


def test_the_label_forms_cached_lists_are_kept_apart_per_language(project):
    # The template caches the rendered type / theme / sub-theme lists, words and all, under
    # this key: an English rendering must not be served to a Chinese reader.
    version = project.taxonomy_version_id
    with translation.override("en"):
        english = label_choices(version, None)["options_key"]
    with translation.override("zh-hans"):
        chinese = label_choices(version, None)["options_key"]
    assert english != chinese
