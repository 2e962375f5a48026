"""In Chromium (#21): the demo lead freezes a release without authors from the releases page.
The form is prefilled with the project's title and licence; the new row says "citation
incomplete", goes from queued to released by itself (htmx polling, no reload), and the page
breaks its Content-Security-Policy nowhere (no `securitypolicyviolation` event, no console
error)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from dataset.models import Release
from dataset.releases import build_release
from labeling.demo import load_demo
from tests.conftest import first_saved
from tests.dataset.test_browser_releases import _label_some

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Installed before any page script: every CSP violation of the page is kept for the test.
WATCH_CSP = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sample}`);
});
"""


def test_the_lead_releases_without_authors_and_the_row_updates_itself_without_csp_errors(
    page, live_server, settings, tmp_path
):
    settings.DATA_DIR = tmp_path / "data"
    settings.EXPORT_ROOT = tmp_path / "exports"
    demo = load_demo()
    project = demo.project
    project.citation_authors = "Lovelace, Ada"
    project.save()
    password = demo.password_file.read_text().strip()
    _label_some(project, 3)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.add_init_script(WATCH_CSP)

    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "demo-lead")
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(live_server.url + reverse("releases", args=[project.pk]))

    # Prefilled from the project.
    assert page.input_value("#id_title") == project.name
    assert page.input_value("#id_licence") == project.licence
    assert page.input_value("#id_authors") == "Lovelace, Ada"
    # The probe can fire: an inline style on this page is reported (and refused).
    page.evaluate("document.body.setAttribute('style', 'color: red')")
    page.wait_for_function("window.__csp.length > 0")
    page.evaluate("window.__csp = []; document.body.removeAttribute('style')")
    problems.clear()

    page.fill("#id_version", "1.0.0")
    page.fill("#id_title", "LLM framework issues")
    page.fill("#id_authors", "")
    page.click("#start-release")
    release = first_saved(page, Release.objects)
    assert release is not None and release.title == "LLM framework issues"
    assert release.authors == ""
    row = page.locator(f"#release-{release.pk}")
    row.wait_for()
    assert "queued" in row.inner_text() and "citation incomplete" in row.inner_text()
    page.evaluate("window.__stayed = true")  # gone if the page reloads

    build_release(release.pk)  # what the worker runs
    row.locator("a.download").wait_for(timeout=10_000)
    assert "released" in row.inner_text() and "queued" not in row.inner_text()
    assert page.evaluate("window.__stayed") is True
    assert "citation incomplete" in row.inner_text()
    assert page.evaluate("window.__csp") == []
    assert not problems, problems
    # No inline style anywhere in what the server sent or htmx swapped in.
    assert page.locator("[style]").count() == 0
