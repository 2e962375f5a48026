"""In Chromium: the demo lead opens the policy simulator from the project page, runs it on the
demo project's labels and sees the trade-off chart (a point per lead value and per fixed panel)
and its table."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.demo import load_demo
from labeling.models import ProjectIssue
from taxonomy.models import TaxonomyNode
from tests.builders import final_issue

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _label(project, count: int) -> None:
    """The three demo annotators label `count` issues through the real submission: all agree on
    most, two against one on every third, which the demo's policy (or its lead) makes final."""
    themes = list(
        TaxonomyNode.objects.filter(
            version=project.taxonomy_version, level=TaxonomyNode.Level.THEME
        )
        .order_by("code")
        .values_list("code", flat=True)[:4]
    )
    items = ProjectIssue.objects.filter(project=project).order_by("position")[:count]
    for n, item in enumerate(items):
        theme = themes[n % 3]
        final_issue(project, item, theme, theme, themes[3] if n % 3 == 0 else theme)


def test_the_demo_lead_sees_the_trade_off_chart(page, live_server):
    demo = load_demo()
    project = demo.project
    _label(project, 12)
    password = demo.password_file.read_text().strip()

    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "demo-lead")
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(live_server.url + reverse("project_detail", args=[project.pk]))
    page.click("text=Policy simulator")
    page.wait_for_url(f"**{reverse('policy_simulator', args=[project.pk])}")
    assert page.locator("#tradeoff-chart").count() == 0
    assert not page.locator("#simulating").is_visible()  # the indicator waits for a run

    page.fill("#id_leads", "2")  # 1, 2 and 3 are always drawn
    page.fill("#id_orders", "5")
    page.click("#simulator-form button[type=submit]")
    chart = page.locator("svg#tradeoff-chart")
    chart.wait_for()
    # Lead 1, 2 and 3 as circles; fixed panels of 2 and 3 (K) as squares, joined by a line.
    assert chart.locator("g.point-adaptive circle").count() == 3
    assert chart.locator("g.point-fixed rect").count() == 2
    assert chart.locator("polyline.fixed-line").count() == 1
    box = chart.bounding_box()
    assert box and box["width"] > 200 and box["height"] > 100
    circle = chart.locator("g.point-adaptive circle").first.bounding_box()
    assert circle and circle["width"] > 4  # drawn, not collapsed
    # Fixed 3: every replay of these issues reaches the majority's final.
    row = page.locator("#simulation-table tr", has_text="fixed 3")
    assert "100.0 %" in row.inner_text()
    assert page.url.endswith(reverse("policy_simulator", args=[project.pk]))  # htmx, no reload
