"""In Chromium: Ada (an annotator) gets an API token on her account page, sees it once, uses it
against the API from a script (a context with no session), then revokes it and is refused (401)."""

import re

import pytest
from django.urls import reverse
from knox.crypto import hash_token
from knox.models import AuthToken

from tests.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_annotator_creates_sees_once_uses_and_revokes_an_api_token(
    browser, live_server, project, annotator
):
    context = browser.new_context()
    script = browser.new_context()  # another client: no session cookie, only the token
    page = context.new_page()
    page.set_default_timeout(10_000)
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    api = f"{live_server.url}{reverse('api_projects')}"
    try:
        log_in(page, live_server, annotator.username)
        page.click("#nav-api-token")
        page.wait_for_url(f"**{reverse('api_token_page')}")
        assert page.locator("#token-status").inner_text() == "You have no API token."
        # The probe fires: without a token the script is refused.
        assert script.request.get(api).status == 401

        page.click("#create-token")
        page.locator("#new-token").wait_for()
        key = page.locator("#new-token").inner_text().strip()
        # Only its digest is stored.
        assert AuthToken.objects.get(user=annotator).digest == hash_token(key) and len(key) == 64

        # Used from the script, it opens the API as Ada: her project is listed.
        response = script.request.get(api, headers={"Authorization": f"Token {key}"})
        assert response.status == 200
        assert [p["name"] for p in response.json()["results"]] == [project.name]

        # Shown once: a later visit says a token exists, never what it is.
        page.goto(f"{live_server.url}{reverse('api_token_page')}")
        assert "You have a token, created" in page.locator("#token-status").inner_text()
        assert key not in page.content()

        page.click("#revoke-token")
        page.wait_for_url(f"**{reverse('api_token_page')}")
        assert "Token revoked" in page.content()
        assert page.locator("#token-status").inner_text() == "You have no API token."
        response = script.request.get(api, headers={"Authorization": f"Token {key}"})
        assert response.status == 401
        assert not AuthToken.objects.filter(user=annotator).exists()
        assert problems == []
    finally:
        context.close()
        script.close()


def test_the_token_page_is_for_signed_in_users_and_refuses_an_unknown_action(
    client, annotator, other_annotator
):
    url = reverse("api_token_page")
    assert client.get(url).status_code == 302  # to the login page
    client.force_login(annotator)
    response = client.post(url, {"action": "print"})
    assert response.status_code == 400
    assert "action: must be create or revoke" in response.content.decode()
    assert not AuthToken.objects.filter(user=annotator).exists()
    # Each creation replaces the one before: one token per user.
    first = _shown_key(client.post(url, {"action": "create"}, follow=True))
    response = client.post(url, {"action": "create"}, follow=True)
    second = _shown_key(response)
    assert first != second
    assert list(AuthToken.objects.filter(user=annotator).values_list("digest", flat=True)) == [
        hash_token(second)
    ]
    assert "no-store" in response["Cache-Control"]
    # Shown once: not on the next visit, nor kept in the session (it rode in a cookie of that
    # page, which the page deleted).
    assert second not in client.get(url).content.decode()
    assert all(second not in str(value) for value in client.session.values())
    assert all(second not in morsel.value for morsel in client.cookies.values())
    # Nor shown to another account signed in on the same browser meanwhile.
    client.post(url, {"action": "create"})
    client.force_login(other_annotator)
    assert "new-token" not in client.get(url).content.decode()


def _shown_key(response) -> str:
    assert response.status_code == 200
    match = re.search(r'<code id="new-token">([0-9a-f]{64})</code>', response.content.decode())
    assert match, "no new key on the page"
    return match.group(1)
