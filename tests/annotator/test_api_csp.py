"""The admin and DRF's browsable API inside the Content-Security-Policy; a favicon everywhere.

Scenario: Lena, a lead, browses the API in Chromium and Sam, the site admin, the admin pages.
A probe listens for every CSP violation the browser reports (the `securitypolicyviolation`
event and console errors). The probe is first shown to fire on one of our own pages when a
style is slipped in; then the API and admin pages load with nothing reported, and their styles
do apply. The app's own pages keep the strict policy.
"""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.urls import reverse

from annotator.models import Project
from tests.conftest import PASSWORD, log_in

PROBE = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push(e.violatedDirective + ' ' + (e.blockedURI || '') + ' ' + e.sample);
}, true);
"""


def _policy(response) -> dict[str, list[str]]:
    policy = {}
    for part in response["Content-Security-Policy"].split(";"):
        name, *values = part.split()
        policy[name] = values
    return policy


# --- Headers, without a browser -----------------------------------------------------------


@pytest.mark.django_db
def test_favicon_is_served_at_the_site_root(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/x-icon"
    assert b"".join(response)[:4] == b"\x00\x00\x01\x00"  # an ICO file's header


@pytest.mark.django_db
def test_our_own_pages_keep_the_strict_policy(client, lead, project):
    client.force_login(lead)
    policy = _policy(client.get(reverse("project_detail", args=[project.pk])))
    assert policy["style-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'"]
    assert "style-src-attr" not in policy


@pytest.mark.django_db
def test_the_browsable_api_gets_a_nonce_for_its_style_and_nothing_for_scripts(client, lead):
    client.force_login(lead)
    response = client.get(reverse("api_projects"), HTTP_ACCEPT="text/html")
    policy = _policy(response)
    nonce = re.search(r'<style nonce="([^"]+)">', response.content.decode())
    assert nonce, "DRF's code style should carry the request's nonce"
    assert policy["style-src"] == ["'self'", f"'nonce-{nonce.group(1)}'"]
    assert policy["style-src-attr"] == ["'unsafe-inline'"]
    assert policy["script-src"] == ["'self'"]
    # The same endpoint's JSON is not a page: the site's policy.
    json_policy = _policy(client.get(reverse("api_projects"), {"format": "json"}))
    assert json_policy["style-src"] == ["'self'"]


# --- In Chromium --------------------------------------------------------------------------


@pytest.fixture
def probed(page):
    """The page with the violation probe installed before any document runs."""
    console: list[str] = []
    page.add_init_script(PROBE)
    page.on(
        "console",
        lambda m: (
            console.append(m.text)
            if m.type == "error" and "Content Security Policy" in m.text
            else None
        ),
    )
    page.csp_console = console
    return page


def violations(page) -> list[str]:
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)  # the event is queued as a task after the load
    return page.evaluate("window.__cspViolations") + page.csp_console


@pytest.fixture
def site_admin(db):
    return User.objects.create_superuser("sam-siteadmin", password=PASSWORD)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_probe_reports_a_style_slipped_into_one_of_our_pages(probed, live_server, lead):
    log_in(probed, live_server, lead.username)
    assert violations(probed) == []
    probed.evaluate(
        """() => {
          const style = document.createElement('style');
          style.textContent = 'body { background: red; }';
          document.head.appendChild(style);
          const div = document.createElement('div');
          div.setAttribute('style', 'color: red');
          document.body.appendChild(div);
        }"""
    )
    probed.wait_for_function("window.__cspViolations.length >= 2")
    reported = violations(probed)
    assert any(v.startswith("style-src-elem") for v in reported), reported
    assert any(v.startswith("style-src-attr") for v in reported), reported
    # Blocked, not just reported.
    assert probed.evaluate("getComputedStyle(document.body).backgroundColor") != "rgb(255, 0, 0)"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_browsable_api_loads_without_a_violation(probed, live_server, lead, project):
    log_in(probed, live_server, lead.username)
    for url in [
        reverse("api_root"),
        reverse("api_projects"),
        reverse("api_project", args=[project.pk]),
        reverse("api_issues", args=[project.pk]),
    ]:
        response = probed.goto(live_server.url + url)
        assert response.status == 200, url
        assert probed.locator(".response-info").count() == 1, url  # DRF's page, rendered
        assert violations(probed) == [], url
    # DRF's styles apply: the nonced <style> is a live sheet, a style attribute takes effect.
    assert probed.evaluate(
        """() => [...document.querySelectorAll('style[nonce]')]
                 .some((s) => s.sheet && s.sheet.cssRules.length > 0)"""
    )
    filters = probed.locator("button[data-target='#filtersModal']")
    assert filters.evaluate("(b) => getComputedStyle(b).float") == "right"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_admin_pages_load_without_a_violation(
    probed, live_server, site_admin, project, annotator, monkeypatch
):
    # A change list without actions is the one admin page with a <style> of its own.
    project_admin = admin.site._registry[Project]
    monkeypatch.setattr(project_admin, "actions_on_top", False)
    monkeypatch.setattr(project_admin, "actions_on_bottom", False)
    log_in(probed, live_server, site_admin.username)
    for url in [
        reverse("admin:index"),
        reverse("admin:auth_user_changelist"),
        reverse("admin:auth_user_add"),
        reverse("admin:auth_user_change", args=[annotator.pk]),
        reverse("admin:annotator_project_change", args=[project.pk]),
        reverse("admin:annotator_project_changelist"),
    ]:
        response = probed.goto(live_server.url + url)
        assert response.status == 200, url
        assert violations(probed) == [], url
    assert probed.evaluate(
        """() => [...document.querySelectorAll('style[nonce]')]
                 .some((s) => s.sheet && s.sheet.cssRules.length > 0)"""
    )


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_favicon_answers_in_the_browser(page, live_server):
    response = page.goto(live_server.url + "/favicon.ico")
    assert response.status == 200
