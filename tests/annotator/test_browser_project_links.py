"""In Chromium: a researcher follows every link on the project page and reaches each page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_researcher_opens_every_link_on_the_project_page(
    page, live_server, project, issues_in_project, researcher
):
    log_in(page, live_server, researcher.username)
    # The probe fires: an address the researcher cannot open is seen as a 404.
    missing = page.goto(live_server.url + reverse("disagreement_queue", args=[project.pk]))
    assert missing is not None and missing.status == 404

    page.goto(live_server.url + reverse("project_detail", args=[project.pk]))
    links = page.locator("#project-actions a")
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    labels = page.locator("#project-actions").inner_text()
    assert "Label next issue" not in labels and "My progress" not in labels
    assert len(hrefs) >= 5
    for href in hrefs:
        response = page.goto(live_server.url + href)
        assert response is not None and response.status == 200, href
        assert "Page not found" not in page.content()
