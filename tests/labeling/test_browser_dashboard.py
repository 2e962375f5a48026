"""In Chromium: Lena (lead) keeps the dashboard open while Ada labels; without reloading,
Lena sees Ada's count go up at the next refresh (the page polls its figures through htmx),
and the page breaks no rule of the Content-Security-Policy (the sparklines and charts are
SVG drawn on the server, coloured by the stylesheet)."""

import pytest
from django.urls import reverse

from labeling import dashboard
from tests.conftest import log_in
from tests.labeling.conftest import take_and_label

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _ada_count(page) -> str:
    return page.locator('tr[data-user="ada-annotator"] .labels-count').inner_text()


def test_lead_watches_an_annotators_count_go_up(
    page, live_server, project, items, lead, annotator, monkeypatch
):
    # The page asks for fresh figures every second instead of every 30 (the live server runs
    # in this process, so it reads the patched value).
    monkeypatch.setattr(dashboard, "REFRESH_SECONDS", 1)
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on(
        "console",
        lambda m: problems.append(m.text) if m.type == "error" else None,
    )
    log_in(page, live_server, lead.username)
    url = live_server.url + reverse("lead_dashboard", args=[project.pk])
    page.goto(url)
    assert _ada_count(page) == "0"
    assert page.locator('tr[data-user="ada-annotator"] svg.sparkline polyline').count() == 1
    stamp = page.locator(".dashboard-stamp time").inner_text()

    take_and_label(annotator, project, "C.1")  # Ada labels her first issue
    take_and_label(annotator, project, "B.2")  # and her second

    # No reload: the figures are swapped in by the poll.
    page.wait_for_function(
        """() => document.querySelector('tr[data-user="ada-annotator"] .labels-count')
                   .textContent.trim() === '2'""",
        timeout=10_000,
    )
    assert page.url == url
    assert page.locator(".dashboard-stamp time").inner_text() != stamp
    # Each submission released its reservation, and she has asked for no other yet.
    assert page.locator('tr[data-user="ada-annotator"] .reservations').inner_text() == "0"
    assert page.locator('tr[data-user="otto-annotator"] .labels-count').inner_text() == "0"

    # A reload shows the same figure.
    page.reload()
    assert _ada_count(page) == "2"
    assert problems == []
