"""In Chromium: an annotator reaches theme C.10 by keyboard, finds the chosen theme's
sub-themes first in the search, reads the Enter hint on the save button, and steps back to the
issue they labeled before."""

import pytest
from django.urls import reverse

from labeling.models import Annotation
from tests.conftest import HeldCatalogue, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _ready(page, item) -> None:
    page.wait_for_url(f"**/label/{item.public_id}/")
    page.locator("body[data-labeling-ready]").wait_for(state="attached")


def test_an_annotator_picks_c10_by_keyboard_and_steps_back(
    page, live_server, project, items, annotator
):
    log_in(page, live_server, annotator.username)
    page.goto(live_server.url + reverse("label_next", args=[project.pk]))
    _ready(page, items[0])
    theme = page.locator("#id_theme option:checked")

    # The Enter hint on the primary button is readable: its colour is not its background's.
    hint = page.evaluate(
        """() => {
          const kbd = document.querySelector('#submit-label kbd');
          const button = document.getElementById('submit-label');
          const bg = getComputedStyle(kbd).backgroundColor;
          const under = bg === 'rgba(0, 0, 0, 0)' ? getComputedStyle(button).backgroundColor : bg;
          return {color: getComputedStyle(kbd).color, background: under};
        }"""
    )
    assert hint["color"] != hint["background"], hint

    page.keyboard.press("b")
    page.keyboard.press("2")
    assert theme.inner_text().startswith("C.2 ")  # one digit acts at once
    page.wait_for_timeout(900)  # past the two-digit delay: the next digits start afresh
    page.keyboard.press("1")
    page.keyboard.press("0")
    assert theme.inner_text().startswith("C.10 "), theme.inner_text()

    # The search ranks the chosen theme's sub-themes first ("configuration" is in several).
    page.keyboard.press("/")
    page.keyboard.type("configuration")
    first = page.locator("#subtheme-hits button.hit").first
    first.wait_for()
    assert first.inner_text().startswith("C.10."), first.inner_text()
    assert page.locator("#subtheme-hits button.hit").count() > 1
    page.locator("#subtheme-search").fill("")
    page.keyboard.press("Escape")  # leaves the search field

    page.keyboard.press("Enter")
    _ready(page, items[1])
    label = Annotation.objects.get(annotator=annotator, issue=items[0].issue)
    assert label.label_code == "C.10"

    # One step back: the issue just labeled, with the own label and the revision form.
    page.keyboard.press("p")
    _ready(page, items[0])
    assert page.locator("#revision-note").is_visible()
    assert page.locator("#id_theme option:checked").inner_text().startswith("C.10 ")
    # Nothing before the first label: the link goes back to where it came from.
    page.keyboard.press("p")
    _ready(page, items[0])


def test_words_typed_in_the_search_before_the_script_runs_are_searched(
    page, live_server, project, items, annotator
):
    # labeling.js is a deferred script behind the translation catalogue: holding the catalogue
    # lets the annotator type while the page has no listener yet.
    log_in(page, live_server, annotator.username)
    catalogue = HeldCatalogue(page)
    page.goto(live_server.url + reverse("label_next", args=[project.pk]), wait_until="commit")
    page.fill("#subtheme-search", "configuration")
    assert page.locator("#subtheme-hits button.hit").count() == 0  # nothing listened yet
    catalogue.release()
    page.locator("body[data-labeling-ready]").wait_for(state="attached")
    page.locator("#subtheme-hits button.hit").first.wait_for()
    assert page.locator("#subtheme-hits button.hit").count() > 1
