"""An address that only takes a form, opened directly (config.middleware.MethodNotAllowedPage).

Ada bookmarks the language switcher's address, or reloads it: she gets a page of the site that
says what happened and leads back, in her language, still a 405 with its Allow header. The API
keeps its own JSON answer, and a client whose Accept header excludes HTML keeps the empty one.
"""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

SWITCH = "/language/"  # takes a POST only


def test_ada_opening_a_form_address_reads_a_page_that_leads_back(client, annotator):
    client.force_login(annotator)
    response = client.get(SWITCH, HTTP_ACCEPT="text/html,application/xhtml+xml")
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert "<h1>This address takes a form, not a visit</h1>" in page
    assert "Back to your projects</a>" in page
    assert "<main" in page  # the site's frame, with its navigation
    assert "Accept" in response["Vary"]


def test_the_page_speaks_the_visitors_language(db):
    response = Client(HTTP_ACCEPT_LANGUAGE="zh-CN").get(SWITCH, HTTP_ACCEPT="text/html")
    assert response.status_code == 405
    assert '<html lang="zh-hans"' in response.content.decode()
    assert "This address takes a form" not in response.content.decode()


def test_a_client_that_reads_no_html_keeps_the_empty_answer(client):
    response = client.get(SWITCH, HTTP_ACCEPT="application/json")
    assert (response.status_code, response.content) == (405, b"")


def test_the_api_keeps_its_own_405(client, lead, project):
    client.force_login(lead)
    url = f"/api/projects/{project.pk}/"
    response = client.delete(url, HTTP_ACCEPT="application/json")
    assert response.status_code == 405
    assert "DELETE" in response.json()["detail"]
    browsable = client.delete(url, HTTP_ACCEPT="text/html").content.decode()
    assert "DELETE" in browsable and "This address takes a form" not in browsable
