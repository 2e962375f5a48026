"""Scenario: every page the site serves, opened by every role, passes axe-core's audit.

A project mid-study (an issue handed to Ada, one she labeled, one in disagreement, one final, a
proposal, detail summaries, an export, a sync run, an invite). Lena the lead, Ada the annotator,
Rita the researcher, Adam the admin (a superuser, so Django's admin too) and a visitor who is
not signed in each get one Chromium context and open every route of the URL conf once (the
routes come from the URL conf, as the fuzz test reads them, so a new page is audited without
editing this test). Every HTML page they may open (200), and each error page (403, 404, 405,
410) once, is checked by axe-core (the engine bundled by `axe-playwright-python`, no network) with
its default rules (WCAG 2.0-2.2 A/AA and best practices); no violation of impact serious or
critical may remain. A failure lists rule, page and node. htmx fragments are audited inside
their pages, not alone.
"""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.http import HttpResponse
from django.urls import path
from django.utils import timezone

from annotator.models import Invite, Membership, Role
from dataset.models import ExportJob
from ingest.models import SyncRun
from labeling import details, proposals
from labeling.models import ProjectIssue, Reservation
from tests.axe import blocking_violations
from tests.builders import final_issue, label_item
from tests.conftest import log_in, make_user
from tests.security import fuzz

# Not pages: files, JSON, the API (DRF's own templates), the health check, and routes that only
# act (log out, skip an issue) or need a one-time token from an e-mail.
NOT_A_PAGE = re.compile(
    r"^(api/|healthz|favicon|accounts/logout|accounts/reset/<)|\.csv$|\.json$|download/$|skip/$"
)


# The audit runs as one chunk per role (the lead's pages in two), so that pytest-xdist spreads
# it over its workers: in one test it held a worker for 1.5 min. A chunk's routes are every
# `PARTS[role]`-th page route; `test_the_chunks_cover_every_page_route_for_every_role` checks
# that no route is left out.
ROLES = ("visitor", "lead", "annotator", "researcher", "admin")
PARTS = {"lead": 2}
CHUNKS = [(role, part) for role in ROLES for part in range(PARTS.get(role, 1))]
# Each role reaches its pages: the lead sees the most, the visitor only the public ones. (Floors
# below today's counts, lead 27 + 23, annotator 26, researcher 28, admin 46, visitor 10; an
# audit that skipped pages had reached 11 of the researcher's.)
AT_LEAST = {"lead": 40, "annotator": 20, "researcher": 20, "admin": 35, "visitor": 5}


@pytest.fixture
def study(project, issues_in_project, lead, annotator, other_annotator, researcher, repository):
    """The project mid-study, its admin, and the ids its routes take."""
    project.annotations_per_issue = 2
    project.save()
    items = list(ProjectIssue.objects.filter(project=project).order_by("position"))
    handed, labeled, disputed, final = items[:4]
    Reservation.objects.create(
        project_issue=handed, annotator=annotator, expires_at=timezone.now() + timedelta(hours=1)
    )
    label_item(annotator, project, labeled, "A.1", summary="Where is the config documented?")
    label_item(annotator, project, disputed, "A.1", summary="Asks how to shard")
    label_item(other_annotator, project, disputed, "C.1", summary="Sharding crashes")
    final_issue(project, final, "C.2", "C.2")
    details.sync_entries(project)
    proposal = proposals.propose(
        project, annotator, name="Licensing questions", parent_code="A", description="Who may"
    )
    job = ExportJob.objects.create(project=project, requested_by=lead)
    run = SyncRun.objects.create(repository=repository)
    Invite.issue_for(project, Role.ANNOTATOR, lead)
    admin = make_user("adam-admin", is_staff=True, is_superuser=True)
    Membership.objects.create(project=project, user=admin, role=Role.ADMIN)
    values = {
        "project_id": [project.pk],
        # The lead's pages of the disputed and the final issue; the label page of the issue
        # handed to Ada, the one she labeled (a revision) and the final one (its change request).
        "item_id": [disputed.pk, final.pk],
        "public_id": [handed.public_id, labeled.public_id, final.public_id],
        "proposal_id": [proposal.pk],
        "version_id": [project.taxonomy_version_id],
        "type_code": ["A"],
        "job_id": [job.pk],
        "run_id": [run.pk],
        "repository_id": [repository.pk],
        "member_id": [Membership.objects.filter(project=project, role=Role.ANNOTATOR).first().pk],
    }
    personas = {"lead": lead, "annotator": annotator, "researcher": researcher, "admin": admin}
    return values, personas


def page_routes() -> list[str]:
    """Every route of the URL conf that serves a page, and Django's admin (its routes are left
    out of fuzz.routes): its index and one change list."""
    routes = ["admin/", "admin/annotator/project/"]
    routes += [r for r in dict.fromkeys(fuzz.routes()) if not NOT_A_PAGE.search(r)]
    return routes


def chunk_routes(role: str, part: int) -> list[str]:
    return page_routes()[part :: PARTS.get(role, 1)]


def page_urls(values: dict, routes: list[str]) -> list[str]:
    """The routes filled with the scenario's ids."""
    return [url for route in routes for url in fuzz.expand(route, values)]


def audit(
    browser, live_server, username: str | None, urls: list[str]
) -> tuple[list[str], int, int]:
    """Open each URL once in one context as this user; the violations, the pages audited, and
    the URLs skipped for an empty answer.

    Each URL is fetched first with the context's own cookies (no rendering); Chromium opens only
    a page that is to be audited. Most URLs are not: a redirect to the login page or to a page
    audited already, a file, an htmx fragment, a second error page of the same status. And an
    empty answer (a download, an error without a body) never reaches Chromium, whose error page
    for it would land after `goto` returned and interrupt the next page's navigation.
    """
    context = browser.new_context()
    context.set_default_timeout(15_000)
    page = context.new_page()
    axe = Axe()
    found: list[str] = []
    audited = skipped = 0
    error_pages: set[int] = set()
    opened: set[str] = set()
    try:
        if username:
            log_in(page, live_server, username)
        for url in urls:
            answer = context.request.get(live_server.url + url)  # redirects followed
            body = answer.body()
            if not body:
                skipped += 1
                continue
            if "text/html" not in answer.headers.get("content-type", ""):
                continue
            landed = urlsplit(answer.url).path  # the login page once, whatever its ?next=
            if landed in opened or b"<html" not in body[:300].lower():
                continue  # a redirect to a page audited already, or an htmx fragment
            # An error page (403, 404, 405, 410) is a page too, audited once per role.
            if answer.status != 200 and answer.status in error_pages:
                continue
            # The page is requested twice: the site's GETs must not change what they answer.
            response = page.goto(live_server.url + url)
            assert response is not None and response.status == answer.status, (
                url,
                answer.status,
                page.url,
            )
            opened.add(landed)
            if answer.status != 200:
                error_pages.add(answer.status)
            audited += 1
            found.extend(blocking_violations(page, axe, f"{username or 'visitor'} {url}"))
    finally:
        context.close()
    return found, audited, skipped


@pytest.mark.parametrize("persona,part", CHUNKS, ids=[f"{r}-{p}" for r, p in CHUNKS])
@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_every_page_as_every_role_has_no_serious_accessibility_violation(
    browser, live_server, study, persona, part
):
    values, personas = study
    urls = page_urls(values, chunk_routes(persona, part))
    username = personas[persona].username if persona != "visitor" else None
    found, audited, skipped = audit(browser, live_server, username, urls)
    # shown with -rP
    print(f"pages audited as {persona} (part {part}): {audited}; empty answers: {skipped}")
    # Each role reached its pages (a role in parts: each part its share).
    assert audited > AT_LEAST.get(persona, 0) // PARTS.get(persona, 1), audited
    assert not found, f"{len(found)} serious/critical axe-core violations:\n" + "\n".join(found)
    # An empty answer is a page nobody can audit: the site's own answers all have a body.
    assert skipped == 0, skipped


def test_the_chunks_cover_every_page_route_for_every_role():
    routes = page_routes()
    assert len(page_urls({}, routes)) > 30  # the URL conf was read
    assert {role for role, _ in CHUNKS} == set(ROLES)
    for role in ROLES:
        covered = [r for role_, part in CHUNKS if role_ == role for r in chunk_routes(role, part)]
        assert sorted(covered) == sorted(routes), role  # each route once, none left out


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_audit_reports_a_page_with_a_serious_violation(browser, live_server, db):
    # The probe can fire: an image without alt text and a control without a name are found.
    context = browser.new_context()
    page = context.new_page()
    try:
        page.set_content(
            '<html lang="en"><head><title>t</title></head><body><main><h1>x</h1>'
            '<img src="data:,"><button></button></main></body></html>'
        )
        found = blocking_violations(page, Axe(), "probe")
    finally:
        context.close()
    rules = {line.split(" ", 1)[0] for line in found}
    assert {"image-alt", "button-name"} <= rules


def _empty_answer(request):
    return HttpResponse(status=400)  # no body: Chromium shows its own error page


def _small_page(request):
    return HttpResponse(
        '<!doctype html><html lang="en"><head><title>t</title></head>'
        "<body><main><h1>A page</h1></main></body></html>"
    )


urlpatterns = [path("empty/", _empty_answer), path("page/", _small_page)]


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_page_after_an_empty_answer_is_still_audited(browser, live_server, settings):
    # Chromium's error page for an empty answer once interrupted the next navigation, and that
    # page went unaudited without a word.
    settings.ROOT_URLCONF = __name__
    found, audited, skipped = audit(browser, live_server, None, ["/empty/", "/page/"])
    assert (audited, skipped) == (1, 1)
    assert found == []


def test_a_form_address_is_among_the_audited_routes():
    # The site's POST-only addresses answer a visit with the 405 page (tests/test_method_not_
    # allowed.py), so the audit meets that page as an error page of every role.
    assert "language/" in page_routes()
