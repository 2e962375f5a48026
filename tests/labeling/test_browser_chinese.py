"""In Chromium, in Chinese: an annotator whose browser asks for Chinese labels an issue by
keyboard, and a lead whose browser does too resolves the disagreement it makes (issue #24).

Every text the test expects is read from the catalogues (`zh` for the templates' catalogue,
`zh_js` for the JavaScript one, as the browser gets it from /jsi18n/), never copied; the keys
are the English letters and digits, the same in every language.
"""

from __future__ import annotations

import gettext as gettext_module
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import translation

from labeling.models import Annotation, Resolution
from tests.conftest import first_saved, log_in
from tests.labeling.conftest import label_item

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def zh(message: str) -> str:
    with translation.override("zh-hans"):
        text = translation.gettext(message)
    assert text != message, f"no Chinese for {message!r}"
    return text


def zh_plural(singular: str, plural: str, n: int) -> str:
    with translation.override("zh-hans"):
        return translation.ngettext(singular, plural, n) % {"counter": n}


def zh_js(message: str) -> str:
    catalogue = gettext_module.translation(
        "djangojs", localedir=str(Path(settings.LOCALE_PATHS[0])), languages=["zh_Hans"]
    )
    text = catalogue.gettext(message)
    assert text != message, f"no Chinese for {message!r} in djangojs"
    return text


@pytest.fixture
def chinese_page(browser):
    """Opens pages in browsers set to Chinese (Chromium then sends Accept-Language: zh-CN),
    one context each: the annotator and the lead are logged in side by side."""
    contexts = []

    def open_page():
        context = browser.new_context(locale="zh-CN")
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(10_000)
        return page

    yield open_page
    for context in contexts:
        context.close()


def _text(page, selector: str) -> str:
    return page.locator(selector).inner_text().strip()


def test_an_annotator_labels_and_a_lead_resolves_in_chinese(
    chinese_page,
    live_server,
    project,
    items,
    lead,
    annotator,
    other_annotator,
    third_annotator,
):
    item = items[0]
    # Two labels that differ at the theme; Ada's, in the browser, is the third (K = 3).
    label_item(other_annotator, project, item, "C.1")
    label_item(third_annotator, project, item, "C.2")
    page = chinese_page()
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))

    # --- the annotator --------------------------------------------------------------------
    log_in(page, live_server, annotator.username)
    page.goto(live_server.url + reverse("label_next", args=[project.pk]))
    page.wait_for_url(f"**/label/{item.public_id}/")
    page.locator("body[data-labeling-ready]").wait_for(state="attached")
    assert page.locator("html").get_attribute("lang") == "zh-hans"
    assert page.title().startswith(zh("Label %(issue)s") % {"issue": item.issue})
    # The buttons, in Chinese, with the same keys.
    assert _text(page, "#submit-label") == f"{zh('Save &amp; next')} Enter"
    assert _text(page, "#skip") == f"{zh('Skip')} s"
    assert _text(page, "#show-help") == f"{zh('Keys')} ?"
    assert _text(page, "label[for=id_issue_type]").startswith(zh("Type"))
    assert page.locator("#subtheme-search").get_attribute("placeholder") == zh(
        "Search sub-themes by name or example… (/)"
    )
    # The script's texts come from the JavaScript catalogue.
    status = page.locator("#label-status")
    assert status.inner_text() == zh_js("No type selected")
    guide = page.locator("#taxonomy-guide-body")

    page.keyboard.press("b")  # Bug, type C in the study's taxonomy: the key is the English one
    type_name = _text(page, "#id_issue_type option:checked")
    assert type_name.startswith("C ")  # the taxonomy's own name: data, never translated
    assert status.inner_text() == zh_js("Type: %(type)s selected") % {"type": type_name}
    assert zh_js("Its themes (the digit keys pick them):") in guide.inner_text()

    page.keyboard.press("3")
    theme_name = _text(page, "#id_theme option:checked")
    assert theme_name.startswith("C.3 ")
    assert status.inner_text() == zh_js("Type: %(type)s, theme: %(theme)s selected") % {
        "type": type_name,
        "theme": theme_name,
    }
    guide_text = guide.inner_text()
    assert zh_js("Sub-themes:") in guide_text or zh_js("No sub-themes.") in guide_text

    # The Keys dialog opens with ?, in Chinese; Escape closes it.
    page.keyboard.press("?")
    help_dialog = page.locator("#help")
    help_dialog.wait_for(state="visible")
    assert _text(page, "#help-title") == zh("Keys")
    assert zh("skip: hand the issue back") in help_dialog.inner_text()
    page.keyboard.press("Escape")
    help_dialog.wait_for(state="hidden")

    page.keyboard.press("Enter")
    saved = Annotation.objects.filter(annotator=annotator, issue=item.issue, is_current=True)
    label = first_saved(page, saved)
    assert label is not None and label.label_code == "C.3"
    assert problems == []

    # --- the lead ---------------------------------------------------------------------------
    lead_page = chinese_page()
    lead_page.on("pageerror", lambda e: problems.append(str(e)))
    log_in(lead_page, live_server, lead.username)
    lead_page.goto(live_server.url + reverse("disagreement_queue", args=[project.pk]))
    assert lead_page.locator("html").get_attribute("lang") == "zh-hans"
    assert _text(lead_page, "h1").startswith(zh("Disagreements"))
    assert _text(lead_page, "#queue-count") == zh_plural(
        "%(counter)s issue waiting for a decision.",
        "%(counter)s issues waiting for a decision.",
        1,
    )
    lead_page.locator("#queue-table").get_by_role("link", name=zh("Resolve")).click()
    lead_page.wait_for_url(f"**/resolve/{item.pk}/**")
    lead_page.locator("body[data-labeling-ready]").wait_for(state="attached")
    assert lead_page.locator("html").get_attribute("lang") == "zh-hans"
    assert _text(lead_page, "#left-count") == zh_plural(
        "%(counter)s disagreement left", "%(counter)s disagreements left", 1
    )
    assert _text(lead_page, "#decision h2") == zh("Decide the final label")
    assert _text(lead_page, "#resolve-next") == f"{zh('Record and next')} Enter"
    assert _text(lead_page, "#resolve") == zh("Record final label")

    # The digit adopts the second card's label, Enter records it.
    second = lead_page.locator(".annotation-card[data-adopt='2']")
    adopted = Annotation.objects.get(
        issue=item.issue,
        is_current=True,
        annotator__username=second.get_attribute("data-annotator"),
    )
    lead_page.keyboard.press("2")
    assert "adopted" in (second.get_attribute("class") or "")
    # The method's key, its option's label in Chinese (no discussion: a lead decision).
    lead_page.keyboard.press("d")
    decision = lead_page.locator("#method input[data-key='d']")
    assert decision.is_checked()
    assert zh("lead decision") in _text(lead_page, "#method")
    lead_page.keyboard.press("Enter")
    lead_page.wait_for_url("**/disagreements/**")
    assert lead_page.locator("html").get_attribute("lang") == "zh-hans"
    final = first_saved(
        lead_page, Resolution.objects.filter(project=project, issue=item.issue, is_current=True)
    )
    assert final is not None
    assert (final.label_code, final.decided_by) == (adopted.label_code, lead)
    assert problems == []
