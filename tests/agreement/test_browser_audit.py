"""In Chromium: a lead opens the label audit, clicks its top row and lands on the resolve page
of the issue whose final label the annotators argue against, ready to reopen it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.agreement.audit_helpers import build_audited_project, careless_annotator
from tests.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_lead_goes_from_the_top_of_the_audit_to_the_resolve_page(
    page, live_server, project, repository, lead, annotator, other_annotator
):
    tia = careless_annotator(project)
    items = build_audited_project(project, repository, lead, [annotator, other_annotator, tia])
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    log_in(page, live_server, lead.username)
    page.goto(live_server.url + reverse("project_detail", args=[project.pk]))
    page.locator("#project-actions").get_by_text("Label audit").click()
    page.wait_for_url(f"**{reverse('label_audit', args=[project.pk])}")

    top = page.locator("#audit-table tbody tr").first
    assert "issues/103" in top.inner_text() and "B.2" in top.inner_text()
    top.locator("a.audit-issue").click()
    page.wait_for_url(f"**{reverse('resolve_issue', args=[project.pk, items[103].pk])}")
    assert page.locator("#reopen").is_visible()  # the final label can be taken back here
    assert problems == []
