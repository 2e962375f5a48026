"""Chromium: a lead adds a classifier rater to a project with enough final issues, runs it,
watches the run finish, reads the validation page, then the policy simulator's trade-off with
the rater enlisted beside the human-only rule."""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.urls import reverse

from labeling.models import MachineRater
from raters.models import RaterRun
from raters.runs import run_rater
from raters.validation import validation_report
from tests.axe import blocking_violations
from tests.conftest import first_saved, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_lead_adds_runs_and_reads_a_classifier(page, live_server, project, lead, finals):
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    log_in(page, live_server, lead.username)
    page.goto(live_server.url + reverse("project_detail", args=[project.pk]))
    page.get_by_role("link", name="Machine raters").click()
    page.locator("#no-raters").wait_for()

    page.fill("#id_name", "tfidf")
    page.select_option("#id_kind", "classifier")
    page.click("#add-rater-button")
    row = page.locator('tr[data-rater="tfidf"]')
    row.wait_for()
    rater = MachineRater.objects.get()
    assert (rater.name, rater.kind, rater.created_by_id) == ("tfidf", "classifier", lead.pk)

    row.locator("select[name=only]").select_option("final")
    row.locator("button.run-rater").click()
    run = first_saved(page, RaterRun.objects)
    assert run is not None and run.only == "final"
    shown = page.locator(f"#run-{run.pk}")
    shown.wait_for()
    assert shown.get_attribute("hx-trigger") == "every 1s"  # it polls while queued
    run_rater(run.pk)  # what the worker runs
    page.wait_for_function(
        "id => document.querySelector('#run-' + id)?.textContent.includes('60 issues labeled')",
        arg=run.pk,
    )

    page.reload()
    figures = validation_report(project)["raters"][0]
    assert row.locator("td.kappa-theme").inner_text() == f"{figures['kappa_theme']:.3f}"
    assert row.locator("td.kappa-type").inner_text() == f"{figures['kappa_type']:.3f}"
    assert "median" in page.locator("#human-kappa").inner_text()
    # The reliability diagram, its table for screen readers, and nothing axe-core refuses.
    figure = page.locator('#reliability figure[data-rater="tfidf"]')
    assert figure.locator("svg.reliability-chart").is_visible()
    assert f"{figures['ece']:.3f}" in figure.locator("figcaption").inner_text()
    figure.locator("summary").click()
    assert figure.locator("table tbody tr").count() == 10
    assert not blocking_violations(page, Axe(), "raters page")

    # The trade-off: the simulator replays the labels with the rater's confident labels as a vote.
    page.goto(live_server.url + reverse("policy_simulator", args=[project.pk]))
    page.select_option("#id_machine_rater", "tfidf")
    page.fill("#id_confidence", "0.5")
    page.click("#simulator-form button[type=submit]")
    table = page.locator("#machine-table")
    table.wait_for()
    assert "tfidf" in page.locator("#machine-result h2").inner_text()
    rows = table.locator("tbody tr")
    assert rows.count() >= 3  # lead values 1, 2 and 3 are always drawn
    for i in range(rows.count()):
        cells = rows.nth(i).locator("td").all_inner_texts()
        human, human_only = float(cells[2]), float(cells[4])
        assert min(human, human_only) >= 1.0  # at least one human label per issue
    assert not problems, problems
