"""The labeling pages speak the language the browser asks for: Simplified Chinese for
`Accept-Language: zh-hans`, English otherwise (issue #24).

The Chinese texts are read from the catalogue (`zh`), never copied into the test, so a
catalogue that loses or empties a translation fails here.
"""

from __future__ import annotations

from django.urls import reverse
from django.utils import translation

from tests.labeling.conftest import label_item

CHINESE = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


def zh(message: str, context: str | None = None) -> str:
    with translation.override("zh-hans"):
        if context:
            return translation.pgettext(context, message)
        return translation.gettext(message)


def zh_plural(singular: str, plural: str, n: int) -> str:
    with translation.override("zh-hans"):
        return translation.ngettext(singular, plural, n) % {"counter": n}


def _assert_translated(message: str) -> str:
    text = zh(message)
    assert text and text != message, f"no Chinese for {message!r}"
    return text


# Texts of the labeling page (the form, the fields kept in the per-language cache, the keys).
LABEL_PAGE = [
    "Save &amp; next",
    "Skip",
    "Keys",
    "Type",
    "Sub-theme",
    "Search sub-themes",
    "Propose a new category",
    "Name and why none of the existing ones fit",
    "symptom, intent or expectation",
    "skip: hand the issue back",
    "this help",
    "Categories",
]


def test_the_labeling_page_is_in_chinese_when_the_browser_asks_and_english_by_default(
    client, project, items, annotator
):
    client.force_login(annotator)
    url = reverse("label_next", args=[project.pk])
    # English first: the cached fragment of label options must not leak into Chinese.
    english = client.get(url, follow=True).content.decode()
    assert '<html lang="en">' in english
    for message in LABEL_PAGE:
        assert message in english, message
    assert '<label for="id_issue_type">Type ' in english

    chinese = client.get(url, follow=True, **CHINESE).content.decode()
    assert '<html lang="zh-hans">' in chinese
    for message in LABEL_PAGE:
        assert _assert_translated(message) in chinese, message
    assert f'<label for="id_issue_type">{zh("Type")} ' in chinese
    assert f'<label for="id_sub_theme">{zh("Sub-theme")} ' in chinese
    for message in ["Save &amp; next", "Propose a new category", "Search sub-themes"]:
        assert message not in chinese, message
    # The keys stay the same in every language.
    assert "<kbd>Enter</kbd></button>" in chinese and "<kbd>s</kbd></button>" in chinese
    # Data is never translated: the taxonomy's own names, the issue's title.
    assert "C Bug" in chinese and items[0].issue.title in chinese


def _disagreement(project, items, annotator, other_annotator, third_annotator):
    item = items[0]
    for user, code in [(annotator, "C.1"), (other_annotator, "C.2"), (third_annotator, "B.1")]:
        label_item(user, project, item, code)
    return item


def test_the_disagreement_queue_is_in_chinese_when_asked_and_english_by_default(
    client, project, items, lead, annotator, other_annotator, third_annotator
):
    _disagreement(project, items, annotator, other_annotator, third_annotator)
    client.force_login(lead)
    url = reverse("disagreement_queue", args=[project.pk])

    english = client.get(url).content.decode()
    assert '<html lang="en">' in english
    assert "1 issue waiting for a decision." in english
    assert ">Resolve</a>" in english and "most split first" in english

    chinese = client.get(url, **CHINESE).content.decode()
    assert '<html lang="zh-hans">' in chinese
    waiting = zh_plural(
        "%(counter)s issue waiting for a decision.",
        "%(counter)s issues waiting for a decision.",
        1,
    )
    assert waiting != "1 issue waiting for a decision."
    assert f'<p class="hint" id="queue-count">{waiting}</p>' in chinese
    assert f"<h1>{_assert_translated('Disagreements')} <small>" in chinese
    assert f">{_assert_translated('Resolve')}</a>" in chinese
    assert _assert_translated("most split first") in chinese
    assert _assert_translated("First disagreement at") in chinese
    assert "waiting for a decision" not in chinese and "most split first" not in chinese


def test_the_resolve_page_is_in_chinese_when_asked(
    client, project, items, lead, annotator, other_annotator, third_annotator
):
    item = _disagreement(project, items, annotator, other_annotator, third_annotator)
    client.force_login(lead)
    page = client.get(reverse("resolve_issue", args=[project.pk, item.pk]), **CHINESE)
    html = page.content.decode()
    assert '<html lang="zh-hans">' in html
    for message in ["Decide the final label", "Record and next", "Votes per level", "Discussion"]:
        assert _assert_translated(message) in html, message
    left = zh_plural("%(counter)s disagreement left", "%(counter)s disagreements left", 1)
    assert f'<span id="left-count">{left}</span>' in html
    assert "Decide the final label" not in html and "Record and next" not in html
    # The usernames on the cards are data.
    assert other_annotator.username in html


def test_every_other_labeling_page_is_in_chinese_when_asked(
    client, project, items, lead, annotator, other_annotator, third_annotator
):
    """The pages of templates/labeling/ beyond the three above, and the new-project page
    (templates/front/), each with texts of its own."""
    item = _disagreement(project, items, annotator, other_annotator, third_annotator)
    lead.is_staff = True  # an admin may create projects
    lead.save()
    pages = [
        (lead, reverse("lead_dashboard", args=[project.pk]), ["Issues per repository", "Total"]),
        (lead, reverse("issue_list", args=[project.pk]), ["Search title and body", "Last label"]),
        (lead, reverse("issue_detail", args=[project.pk, item.pk]), ["Final label", "Resolve"]),
        (lead, reverse("project_guideline", args=[project.pk]), ["No guideline yet.", "Edit"]),
        (lead, reverse("project_setup", args=[project.pk]), ["Stopping rule", "Seed"]),
        (lead, reverse("project_create", args=[]), ["New project", "Preview the scope"]),
        (annotator, reverse("my_progress", args=[project.pk]), ["issues labeled", "Your label"]),
        (annotator, reverse("project_create", args=[]), ["You may not create projects"]),
    ]
    for user, url, messages in pages:
        client.force_login(user)
        response = client.get(url, **CHINESE)
        html = response.content.decode()
        assert response.status_code in (200, 403), url
        assert '<html lang="zh-hans">' in html, url
        for message in messages:
            assert _assert_translated(message) in html, (url, message)
            assert f">{message}<" not in html, (url, message)


def test_nothing_left_is_in_chinese_when_asked(client, project, annotator):
    client.force_login(annotator)
    html = client.get(reverse("label_next", args=[project.pk]), **CHINESE).content.decode()
    heading = zh("Nothing left for you to label in %(name)s") % {"name": project.name}
    assert f"<h1>{heading}</h1>" in html
    assert zh_plural("You labeled %(counter)s issue.", "You labeled %(counter)s issues.", 0) in html
