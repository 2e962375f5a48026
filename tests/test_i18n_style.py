"""Scenario: Li Wei reads the Chinese interface; its sentences are punctuated and worded as one.

* Inside a Chinese sentence the punctuation is full-width (U+FF0C, U+3002, U+FF1A ...): the
  catalogue is searched for ASCII , . : ; ? ! between Chinese characters, placeholders, HTML
  tags, code and quoted examples (“Family, Given”: what the reader types) left aside;
* the pages a lead opens, rendered in Chinese, show no such ASCII punctuation either (a colon or a
  full stop written in the template beside a translated phrase, Django's form label suffix);
* key terms read one way across the catalogue (`GLOSSARY`): "final" an issue's state is 已定稿,
  its label 最终标注, never a third word beside them on one page.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import polib
import pytest
from django.urls import reverse
from django.utils import translation

from annotator.templatetags.symbols import symbols
from ingest.models import Issue
from labeling.models import ProjectIssue
from raters.runs import RaterSettings, add_rater

ROOT = Path(__file__).resolve().parent.parent
MESSAGES = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES"
CATALOGUE = MESSAGES / "django.po"

HAN = r"[\u3400-\u9fff\uf900-\ufaff]"
# What is not prose: placeholders, tags, entities, code, URLs and quoted examples.
_NOT_PROSE = re.compile(
    r"%\([A-Za-z_]\w*\)[#0 +-]?\d*(?:\.\d+)?[sdifr]|%[sdifr]|\{[A-Za-z_]\w*\}"
    r"|<code>.*?</code>|</?[A-Za-z][^<>]*>|&[A-Za-z]+;|`[^`]*`|https?://\S+|“[^”]*”"
)
_ASCII_IN_CHINESE = [
    re.compile(rf"{HAN} ?[,:;?!]"),  # 议题, / 议题:
    re.compile(rf"[,:;?!] ?{HAN}"),  # ,议题
    re.compile(rf"{HAN}\.(?=\s|$)"),  # 议题.  (not 1.5 or v1.2)
    re.compile(rf"\([^()]*{HAN}[^()]*\)"),  # (中文)
]


def ascii_punctuation(text: str) -> list[str]:
    """Each ASCII punctuation mark of `text` that stands inside Chinese prose, with its
    neighbours."""
    prose = _NOT_PROSE.sub("\ue000", text)
    return [match.group(0) for rule in _ASCII_IN_CHINESE for match in rule.finditer(prose)]


def _translations(entry: polib.POEntry) -> list[str]:
    return list(entry.msgstr_plural.values()) if entry.msgid_plural else [entry.msgstr]


@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_the_catalogue_punctuates_chinese_sentences_in_full_width(domain):
    found = [
        f"{entry.msgid[:60]!r}: {marks}"
        for entry in polib.pofile(str(MESSAGES / f"{domain}.po"))
        if not entry.obsolete
        for text in _translations(entry)
        if (marks := ascii_punctuation(text))
    ]
    assert not found, "ASCII punctuation in Chinese (use full-width):\n" + "\n".join(found)


def test_the_punctuation_check_fires_and_leaves_code_alone():
    assert ascii_punctuation("已保存, 请刷新.") == ["存,", ", 请", "新."]
    assert ascii_punctuation("议题:%(n)s") == ["题:"]
    assert ascii_punctuation("见 (分类体系)") == ["(分类体系)"]
    assert ascii_punctuation("已保存，请刷新。") == []  # noqa: RUF001
    assert ascii_punctuation("%(file)s:%(line)s 行") == []  # no Chinese beside the colon
    assert ascii_punctuation("个人写作“姓, 名”。") == []  # a typed example
    assert ascii_punctuation("版本 v1.2 与 0.5 的 `a, b` 及 <a href='x'>链接</a>") == []


# (term in the English, a pattern that term must match in its translation, why)
GLOSSARY = [
    (
        re.compile(r"\bfinal\b(?! (?:theme|type)\b)", re.I),
        re.compile(r"定稿|最终标注"),
        "final: an issue's state 已定稿, its label 最终标注",
    ),
    (re.compile(r"\bdisagreements?\b", re.I), re.compile(r"分歧"), "disagreement: 分歧"),
    (re.compile(r"\btaxonomy\b", re.I), re.compile(r"分类体系"), "taxonomy: 分类体系"),
]


def glossary_departures(entries: list[polib.POEntry]) -> list[str]:
    found = []
    for entry in entries:
        if entry.obsolete or not entry.translated():
            continue
        for term, wanted, rule in GLOSSARY:
            if term.search(_NOT_PROSE.sub(" ", entry.msgid)) and not all(
                wanted.search(text) for text in _translations(entry)
            ):
                found.append(f"{entry.msgid[:70]!r} → {_translations(entry)[0][:40]!r} ({rule})")
    return found


def test_key_terms_read_one_way_across_the_catalogue():
    found = glossary_departures(list(polib.pofile(str(CATALOGUE))))
    assert not found, "\n".join(found)


def test_the_glossary_check_fires():
    entries = [
        polib.POEntry(msgctxt="issue status", msgid="final", msgstr="最终"),
        polib.POEntry(msgid="%(p)s%% final", msgstr="%(p)s%% 已最终确定"),
        polib.POEntry(msgid="Final label", msgstr="最终标注"),
        polib.POEntry(msgid="Final theme", msgstr="最终主题"),
        polib.POEntry(msgid="not final yet", msgstr="尚未定稿"),
    ]
    assert [line.split(" → ")[0] for line in glossary_departures(entries)] == [
        "'final'",
        "'%(p)s%% final'",
    ]


# --- Pages a lead reads in Chinese ---------------------------------------------------------------

LEAD_PAGES = [
    "project_detail",
    "lead_dashboard",
    "agreement_report",
    "exports",
    "releases",
    "upload_issues",
    "filter_recall",
    "table_one",
    "policy_simulator",
    "raters_page",
    "interviews",
    "taxonomy_proposals",
    "project_setup",
]


def page_text(content: str) -> str:
    """What a reader sees of a page: no scripts, styles, tags or code."""
    content = re.sub(r"(?s)<(script|style|code|pre|kbd)\b.*?</\1>", " ", content)
    return html.unescape(re.sub(r"<[^>]+>", "", content))


@pytest.mark.django_db
def test_a_lead_reads_each_page_in_chinese_with_chinese_punctuation(
    client, project, issues_in_project, lead
):
    client.force_login(lead)
    found = []
    for name in LEAD_PAGES:
        url = reverse(name, kwargs={"project_id": project.pk})
        response = client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans")
        assert response.status_code == 200, url
        text = page_text(response.content.decode())
        found += [f"{url}: {mark!r}" for mark in ascii_punctuation(" ".join(text.split()))]
    assert not found, "\n".join(found)


def test_the_page_check_sees_text_between_tags():
    assert ascii_punctuation(page_text("<p>导入后位于 <a href='x'>项目的议题</a>.</p>")) == ["题."]
    assert ascii_punctuation(page_text("<label>用户名:</label><code>a: 值</code>")) == ["名:"]


# --- Greek letters in upper-cased headers ----------------------------------------------------


def test_a_greek_letter_keeps_its_case_in_an_upper_cased_header():
    """CSS upper-cases table headers (`.table th`): κ would become a capital kappa, read as a
    Latin K. The letter is wrapped in a span the style sheet leaves as written."""
    assert symbols("Fleiss' κ <b>") == 'Fleiss&#x27; <span class="sym">κ</span> &lt;b&gt;'
    alpha = "\u03b1"
    assert (
        symbols(f"Krippendorff's {alpha}")
        == f'Krippendorff&#x27;s <span class="sym">{alpha}</span>'
    )
    assert symbols("Kappa") == "Kappa"
    css = (ROOT / "static" / "css" / "app.css").read_text()
    assert "text-transform: uppercase" in css.split(".table th {", 1)[1].split("}", 1)[0]
    assert re.search(r"\.table th \.sym \{[^}]*text-transform: none", css)


@pytest.mark.django_db
def test_the_agreement_and_raters_headers_keep_kappa_lower_case(client, project, lead):
    add_rater(project, RaterSettings(name="tfidf", kind="classifier"), lead)  # a raters table
    client.force_login(lead)
    for name in ("agreement_report", "raters_page"):
        page = client.get(
            reverse(name, kwargs={"project_id": project.pk}), HTTP_ACCEPT_LANGUAGE="zh-hans"
        ).content.decode()
        headers = " ".join(re.findall(r"<th\b[^>]*>.*?</th>", page, re.S))
        assert '<span class="sym">κ</span>' in headers, name
        assert not re.findall(r'(?<!<span class="sym">)κ', headers), name  # each in its span


# --- Words the pages took from stored values -------------------------------------------------


@pytest.mark.django_db
def test_the_dashboard_badge_and_the_forge_state_read_in_chinese(
    client, project, issues_in_project, lead
):
    client.force_login(lead)
    board = client.get(
        reverse("lead_dashboard", args=[project.pk]), HTTP_ACCEPT_LANGUAGE="zh-hans"
    ).content.decode()
    assert '<span class="badge">负责人</span>' in board and '<span class="badge">lead' not in board
    item = ProjectIssue.objects.get(project=project, issue=issues_in_project[0])
    assert item.issue.state == "open"  # as the forge gave it
    page = client.get(
        reverse("issue_detail", args=[project.pk, item.pk]), HTTP_ACCEPT_LANGUAGE="zh-hans"
    ).content.decode()
    meta = page.split('class="issue-meta"', 1)[1].split("</p>", 1)[0]
    assert "· 未关闭" in meta and "· open" not in meta
    english = client.get(reverse("issue_detail", args=[project.pk, item.pk])).content.decode()
    assert "· open" in english.split('class="issue-meta"', 1)[1].split("</p>", 1)[0]


def test_a_forge_state_no_forge_documents_is_shown_as_stored():
    with translation.override("zh-hans"):
        assert Issue(state="opened").state_shown == "未关闭"  # GitLab's word
        assert Issue(state="closed").state_shown == "已关闭"
        assert Issue(state="locked").state_shown == "locked"
