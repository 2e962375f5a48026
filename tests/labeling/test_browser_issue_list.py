"""In Chromium: Lena the lead remembers a word of an issue's description, finds the issue from
the project page's "Issues" link by searching for it, and opens it."""

import pytest
from django.urls import reverse

from labeling.models import ProjectIssue
from tests.conftest import log_in, make_issue

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_lead_searches_for_a_word_of_the_body_and_opens_the_issue(
    page, live_server, project, repository, issues_in_project, lead
):
    wanted = make_issue(
        repository,
        777,
        title="Checkpoint conversion question",
        body="Converting the checkpoint **crashes** the interpreter with a segfault.",
    )
    item = ProjectIssue.objects.create(project=project, issue=wanted, position=99)
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)

    log_in(page, live_server, lead.username)
    page.goto(live_server.url + reverse("project_detail", args=[project.pk]))
    page.locator("#project-actions").get_by_role("link", name="Issues", exact=True).click()
    page.wait_for_url("**/issues/")
    # All seven issues are listed before the search.
    assert page.locator("#issue-table tbody tr[data-item]").count() == 7

    page.fill("#issue-search", "segfaults")  # a word of the body, in another form
    page.keyboard.press("Enter")
    page.wait_for_url("**/issues/?q=segfaults**")
    rows = page.locator("#issue-table tbody tr[data-item]")
    assert rows.count() == 1
    assert rows.first.get_attribute("data-item") == str(item.pk)
    assert page.locator("#issue-search").input_value() == "segfaults"

    rows.first.locator("a.issue-link").click()
    page.wait_for_url(f"**{reverse('issue_detail', args=[project.pk, item.pk])}")
    assert page.locator("#issue-title").inner_text() == "Checkpoint conversion question"
    assert page.locator("#issue-body strong").inner_text() == "crashes"
    assert page.locator("#final-label").inner_text() == "Not final yet."
    assert problems == []
