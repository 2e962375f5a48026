# ruff: noqa: RUF001 (the page shows intervals with an en dash)
"""Chromium: Rita (researcher) reads the estimates page. Lena's project has labeled the front
of its seeded queue (70 of 80 issues final) and an external rater labeled every issue. Rita
signs in, opens the project page, follows "Estimates with machine help", chooses the rater and
the theme level with the keyboard, submits, and reads a theme's share and its interval: they
are `raters.estimates.estimate(...)` computed here. The page with its results, and Table I with
its estimated columns, pass axe-core's audit (no serious or critical violation)."""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.urls import reverse

from labeling.models import MachineRater
from raters.estimates import estimate
from tests.axe import blocking_violations
from tests.conftest import log_in
from tests.raters.test_release_estimates import labeled_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_researcher_reads_a_share_and_its_interval(
    page, live_server, project, repository, annotator, other_annotator, researcher
):
    rater = labeled_study(project, repository, annotator, other_annotator, open_issues=10)
    MachineRater.objects.filter(pk=rater.pk).update(enlisted=True)
    expected = {
        row["code"]: row for row in estimate(project, rater, level="theme").as_json()["estimates"]
    }
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))

    log_in(page, live_server, researcher.username)
    page.goto(live_server.url + reverse("project_detail", args=[project.pk]))
    page.get_by_role("link", name="Estimates with machine help").click()
    page.locator("#estimate-form").wait_for()

    # The keyboard only: the rater by its first letters, the level one step down, then Tab
    # through the rest of the form to its button.
    page.locator("#id_rater").focus()
    page.keyboard.type("their")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "id_level"
    page.keyboard.press("ArrowDown")
    for _ in range(10):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.type") == "submit":
            break
    assert page.evaluate("document.activeElement.textContent").strip() == "Estimate"
    page.keyboard.press("Enter")
    page.locator("#estimate-result").wait_for()
    assert "rater=" in page.url and "level=theme" in page.url

    sample = page.locator("#estimate-sample").inner_text()
    assert "70 human-labeled issues of 80 in scope" in sample and "their-model" in sample
    row = page.locator('#estimates tr[data-code="C.1"]')
    cells = row.locator("td").all_inner_texts()
    want = expected["C.1"]
    assert float(row.locator("td.share").inner_text()) == pytest.approx(want["share"], abs=5e-4)
    low, high = (float(x) for x in cells[2].split("–"))
    assert (low, high) == pytest.approx((want["ci_low"], want["ci_high"]), abs=5e-4)
    classical_low, classical_high = (float(x) for x in cells[4].split("–"))
    assert classical_high - classical_low >= high - low - 1e-3  # the rater did not widen it
    assert page.locator("#estimates tbody tr").count() == len(expected)

    axe = Axe()
    found = blocking_violations(page, axe, "researcher estimates page with results")
    # Table I with the enlisted rater's estimates beside the counts.
    page.goto(live_server.url + reverse("table_one", args=[project.pk]))
    page.locator("#table-one-estimates-method").wait_for()
    assert page.locator("td.estimated").count() > 0
    found += blocking_violations(page, axe, "researcher Table I with estimates")
    assert not found, "\n".join(found)
    assert not problems, problems
