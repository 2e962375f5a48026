"""In Chromium: Vera accepts her invite through the university's identity provider (a real
OpenID Connect provider on 127.0.0.1, tests/annotator/fake_oidc.py), under the site's CSP."""

import json

import pytest
from django.contrib.auth.models import User

from annotator.models import Invite, Membership, Role
from config.signin import social_providers
from tests.annotator.fake_oidc import CLIENT_ID, CLIENT_SECRET, FakeOIDCProvider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def idp(settings):
    with FakeOIDCProvider() as provider:
        settings.SOCIALACCOUNT_PROVIDERS = social_providers(
            {
                "OIDC_PROVIDERS": json.dumps(
                    [
                        {
                            "id": "uni",
                            "name": "University SSO",
                            "server_url": provider.issuer,
                            "client_id": CLIENT_ID,
                            "secret": CLIENT_SECRET,
                        }
                    ]
                )
            }
        )
        yield provider


def test_volunteer_joins_through_the_identity_provider(page, live_server, idp, lead, project):
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    _, token = Invite.issue_for(project, Role.ANNOTATOR, lead)
    idp.next_user = {"sub": "vera-0001", "preferred_username": "vera-volunteer"}

    page.goto(f"{live_server.url}/invite/{token}/")
    page.click("text=Join with University SSO")
    # Only if the page's CSP lets the form's redirect go to the provider (form-action).
    page.wait_for_url(f"{live_server.url}/")

    assert "You joined LLM issues pilot as annotator" in page.content()
    assert page.locator(".account .username").inner_text() == "vera-volunteer"
    vera = User.objects.get(username="vera-volunteer")
    assert Membership.objects.get(project=project, user=vera).role == Role.ANNOTATOR
    assert idp.pkce_checked
    assert errors == []
