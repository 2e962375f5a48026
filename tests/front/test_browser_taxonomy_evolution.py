"""In Chromium: a volunteer proposes a sub-theme, the others approve, and it joins the project's
taxonomy; then a lead merges two themes and the version diff shows it."""

import pytest
from playwright.sync_api import expect

from tests.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def new_page(browser, live_server, username, errors):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(10_000)
    # CSP violations and script errors surface as console errors.
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    log_in(page, live_server, username)
    return page


def test_proposal_vote_and_merge(browser, live_server, project, lead, annotator, other_annotator):
    errors: list[str] = []
    volunteer = new_page(browser, live_server, annotator.username, errors)
    volunteer.goto(f"{live_server.url}/projects/{project.pk}/")
    volunteer.click("#project-actions >> text=Taxonomy proposals")
    volunteer.select_option("#id_parent", "A.2")
    volunteer.fill("#id_name", "Parameter Interaction Guidance")
    volunteer.fill("#id_description", "How combinations of parameters change model behaviour.")
    volunteer.click("#proposal-form button[type=submit]")
    pending = volunteer.locator("#pending-proposals .proposal").first
    assert "Parameter Interaction Guidance" in pending.inner_text()
    assert "1 of 2 approve" in pending.inner_text()
    volunteer.context.close()

    other = new_page(browser, live_server, other_annotator.username, errors)
    other.goto(f"{live_server.url}/projects/{project.pk}/taxonomy/proposals/")
    other.click("#pending-proposals .proposal button.approve")
    assert "is now A.2.iii" in other.locator(".messages").inner_text()
    assert "accepted as A.2.iii" in other.locator("#decided-proposals").inner_text()
    other.click("#project-taxonomy-link")
    node = other.locator('li.sub-theme[data-code="A.2.iii"]')
    assert "Parameter Interaction Guidance" in node.text_content()  # inside a closed <details>
    other.context.close()

    lead_page = new_page(browser, live_server, lead.username, errors)
    lead_page.goto(f"{live_server.url}/projects/{project.pk}/taxonomy/edit/")
    lead_page.select_option("#id_operation", "merge")
    # The form shows only the fields a merge uses.
    assert lead_page.locator("#id_name").is_hidden()
    lead_page.select_option("#id_node", "A.4")
    lead_page.select_option("#id_other", "A.3")
    lead_page.click("#edit-form button[type=submit]")
    lead_page.wait_for_url("**/taxonomy/diff/**")
    merged = lead_page.locator('#diff li[data-kind="merged"]')
    assert merged.inner_text().endswith(
        "A.4 Cross-Platform Deployment Issues was merged into "
        "A.3 Unexpected Behavior and Weird Design"
    )
    assert lead_page.locator('#diff li[data-kind="moved"]').count() == 2
    # The versions page lists all three, the newest in use.
    lead_page.click(".tax-evo-nav >> text=Versions")
    # The click starts a navigation; count() would not wait for the new page (CI saw 0).
    expect(lead_page.locator("#versions tbody tr")).to_have_count(3)
    assert "in use" in lead_page.locator('#versions tr[data-version="3"]').inner_text()
    lead_page.context.close()
    assert errors == []
