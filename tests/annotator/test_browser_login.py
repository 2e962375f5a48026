"""In Chromium: a volunteer logs in and finds a sub-theme through the taxonomy search."""

import pytest

from tests.conftest import HeldCatalogue, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_volunteer_logs_in_and_finds_a_sub_theme(page, live_server, annotator, taxonomy_version):
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    log_in(page, live_server, annotator.username)
    page.click("text=Taxonomy")
    page.fill("#taxonomy-search", "NCCL timeout")
    hit = page.locator(".search-results .hit").first
    hit.wait_for()
    assert page.locator("#result-count").inner_text().startswith("1 node")
    assert hit.get_attribute("data-code") == "C.3.i"
    assert "Distributed Communication and Initialization Bugs" in hit.inner_text()
    # The search is in the address bar, so the result can be shared.
    assert "q=NCCL" in page.url
    assert errors == []


def test_a_search_typed_before_the_scripts_arrive_is_not_lost(
    page, live_server, annotator, taxonomy_version
):
    # htmx listens from DOMContentLoaded, which waits for every deferred script: holding the
    # translation catalogue back lets the volunteer type while nothing listens yet.
    log_in(page, live_server, annotator.username)
    catalogue = HeldCatalogue(page)
    page.click("text=Taxonomy")
    page.fill("#taxonomy-search", "NCCL timeout")
    catalogue.release()
    hit = page.locator(".search-results .hit").first
    hit.wait_for()
    assert hit.get_attribute("data-code") == "C.3.i"
    assert "q=NCCL" in page.url
