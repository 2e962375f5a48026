"""In Chromium: Lena, a lead an admin allowed to create projects, makes one with the form.

She previews how many issues her scope selects and lands on the new project's page as its lead.
She is offered no box to add existing accounts (only admins add them; she invites members once
the project exists: #20, I1). The page breaks no Content-Security-Policy rule.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from annotator.models import Project, Role
from labeling.models import ProjectIssue
from tests.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_lead_with_the_permission_creates_a_project_and_is_its_lead(
    page, live_server, lead, project, issues_in_project, repository, annotator
):
    lead.user_permissions.add(
        Permission.objects.get(content_type__app_label="annotator", codename="add_project")
    )
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))

    log_in(page, live_server, lead.username)
    page.click("#new-project")
    page.wait_for_url(f"{live_server.url}/projects/new/")

    page.fill("#id_name", "Agents study")
    page.fill("#id_annotations_per_issue", "4")
    page.get_by_label(repository.full_name).check()
    page.click("#preview-scope")
    # The six issues of the pilot's fixture, all in Megatron-LM, counted before saving.
    page.wait_for_selector("#scope-total")
    assert page.inner_text("#scope-total") == str(len(issues_in_project)) == "6"
    assert repository.full_name in page.inner_text("#scope-counts")
    assert page.url == f"{live_server.url}/projects/new/"  # a preview saves nothing
    assert not Project.objects.filter(name="Agents study").exists()

    assert page.locator("#id_members").count() == 0  # existing accounts: admins only
    page.click("#create-project")
    created = Project.objects.get(name="Agents study")
    page.wait_for_url(f"{live_server.url}/projects/{created.pk}/")

    members = page.inner_text("#members")
    assert lead.username in members and annotator.username not in members
    assert "created with 6 issues in scope and 1 member." in page.inner_text(".messages")
    assert created.annotations_per_issue == 4
    assert created.role_of(lead) == Role.LEAD
    assert ProjectIssue.objects.filter(project=created).count() == 6
    assert [p for p in problems if "Content Security Policy" in p] == []
