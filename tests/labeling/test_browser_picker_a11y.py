"""In Chromium: an annotator labeling by keyboard with a screen reader hears the picker's state.

The letter and digit keys change the type and theme selects without moving the focus, so the
page says what is chosen in a polite live region (`#label-status`); the focused control shows a
visible outline; the states the script builds pass axe-core.
"""

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.urls import reverse

from tests.axe import blocking_violations
from tests.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_picker_announces_each_choice_made_by_keyboard(
    page, live_server, project, items, annotator
):
    log_in(page, live_server, annotator.username)
    page.goto(live_server.url + reverse("label_next", args=[project.pk]))
    page.locator("body[data-labeling-ready]").wait_for(state="attached")
    status = page.locator("#label-status")
    assert status.get_attribute("role") == "status"
    assert status.get_attribute("aria-live") == "polite"
    assert status.inner_text() == "No type selected"

    page.keyboard.press("b")  # Bug is type C in the study's taxonomy
    assert status.inner_text() == "Type: C Bug selected"
    page.keyboard.press("2")
    said = status.inner_text()
    assert said.startswith("Type: C Bug, theme: C.2 ") and said.endswith(" selected"), said

    page.keyboard.press("n")
    assert status.inner_text() == "Not LLM-related selected"
    page.keyboard.press("n")  # unticked again: the chosen type and theme are back
    assert status.inner_text() == said


def test_the_focused_control_has_a_visible_outline(page, live_server, project, items, annotator):
    log_in(page, live_server, annotator.username)
    page.goto(live_server.url + reverse("label_next", args=[project.pk]))
    page.locator("body[data-labeling-ready]").wait_for(state="attached")
    page.locator("#id_summary").focus()
    page.keyboard.press("Tab")  # keyboard focus, so :focus-visible applies
    outline = page.evaluate(
        """() => {
          const style = getComputedStyle(document.activeElement);
          return {tag: document.activeElement.tagName, style: style.outlineStyle,
                  width: parseFloat(style.outlineWidth)};
        }"""
    )
    assert outline["tag"] == "TEXTAREA", outline  # the note follows the summary
    assert outline["style"] != "none" and outline["width"] >= 2, outline


def test_the_keys_dialog_and_the_search_hits_pass_the_audit(
    page, live_server, project, items, annotator
):
    """What the page's script builds (the search hits, the open Keys dialog) is audited too."""
    log_in(page, live_server, annotator.username)
    page.goto(live_server.url + reverse("label_next", args=[project.pk]))
    page.locator("body[data-labeling-ready]").wait_for(state="attached")
    axe = Axe()
    page.keyboard.press("/")
    page.keyboard.type("configuration")
    page.locator("#subtheme-hits button.hit").first.wait_for()
    found = blocking_violations(page, axe, "search hits")
    page.keyboard.press("Escape")
    page.keyboard.press("?")
    page.locator("dialog#help[open]").wait_for()
    found += blocking_violations(page, axe, "Keys dialog")
    assert not found, "\n".join(found)
