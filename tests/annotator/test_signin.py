"""Sign-in through the team's identity provider: a real OpenID Connect provider on 127.0.0.1
(tests/annotator/fake_oidc.py) that the Django test client follows the redirects to.

Vera is invited and joins through the provider; Ada's look-alike at the provider is refused;
Oscar, with no invite, gets no account; the client secret is never on a page.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest
import requests
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth.models import User

from annotator.models import Invite, Membership, Project, Role
from config.signin import social_providers
from tests.annotator.fake_oidc import CLIENT_ID, CLIENT_SECRET, FakeOIDCProvider
from tests.conftest import PASSWORD

PROVIDER_ID = "testidp"
LOGIN_URL = f"/accounts/oidc/{PROVIDER_ID}/login/"


@pytest.fixture
def idp(settings):
    with FakeOIDCProvider() as provider:
        # Configured as an operator would, through the environment's format.
        settings.SOCIALACCOUNT_PROVIDERS = social_providers(
            {
                "OIDC_PROVIDERS": json.dumps(
                    [
                        {
                            "id": PROVIDER_ID,
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


def _through_provider(client, start_url: str, data: dict | None = None):
    """POST the button, follow the redirect to the provider and back; the callback's response."""
    start = client.post(start_url, data or {})
    assert start.status_code == 302, start.content
    to_provider = start["Location"]
    assert to_provider.startswith("http://127.0.0.1:"), to_provider
    answer = requests.get(to_provider, allow_redirects=False, timeout=10)
    assert answer.status_code == 302
    back = urlsplit(answer.headers["Location"])
    assert back.path == f"/accounts/oidc/{PROVIDER_ID}/login/callback/"
    return client.get(f"{back.path}?{back.query}")


def _signed_in_as(client) -> User | None:
    user_id = client.session.get("_auth_user_id")
    return None if user_id is None else User.objects.get(pk=user_id)


@pytest.mark.django_db
def test_invited_volunteer_joins_through_the_provider_and_signs_in_again(
    client, idp, lead, project
):
    invite, token = Invite.issue_for(project, Role.ANNOTATOR, lead)
    page = client.get(f"/invite/{token}/")
    assert b"Join with University SSO" in page.content
    assert f"form-action 'self' {idp.issuer}" in page["Content-Security-Policy"]
    idp.next_user = {
        "sub": "vera-0001",
        "preferred_username": "vera-volunteer",
        "email": "vera@uni.example",
    }

    done = _through_provider(client, f"/invite/{token}/sign-in/", {"provider": PROVIDER_ID})

    assert done.status_code == 302, done.content
    vera = User.objects.get(username="vera-volunteer")
    assert _signed_in_as(client) == vera
    assert not vera.has_usable_password()
    membership = Membership.objects.get(project=project, user=vera)
    assert membership.role == Role.ANNOTATOR
    assert membership.pseudonym and "vera" not in membership.pseudonym
    invite.refresh_from_db()
    assert invite.used_by == vera and invite.used_at is not None
    assert SocialAccount.objects.get(user=vera).uid == "vera-0001"
    assert len(idp.pkce_checked) == 1 and idp.refused == []
    home = client.get("/")
    assert b"vera-volunteer" in home.content
    assert b"/accounts/password_change/" not in home.content  # no password to change

    # Later, from the login page: the linked account signs in, nothing new is made.
    client.logout()
    login_page = client.get("/accounts/login/")
    assert b"Sign in with University SSO" in login_page.content
    again = _through_provider(client, LOGIN_URL)
    assert again.status_code == 302
    assert _signed_in_as(client) == vera
    assert User.objects.filter(email="vera@uni.example").count() == 1
    # The invite stays used: its link is refused.
    assert client.get(f"/invite/{token}/").status_code == 410


@pytest.mark.django_db
def test_a_linked_account_accepts_another_projects_invite_through_the_provider(
    client, idp, lead, project
):
    _, first_token = Invite.issue_for(project, Role.ANNOTATOR, lead)
    idp.next_user = {"sub": "vera-0001", "preferred_username": "vera-volunteer"}
    _through_provider(client, f"/invite/{first_token}/sign-in/", {"provider": PROVIDER_ID})
    client.logout()
    second_project = Project.objects.create(
        name="Second study", taxonomy_version=project.taxonomy_version
    )
    second, token = Invite.issue_for(second_project, Role.RESEARCHER, lead)

    joined = _through_provider(client, f"/invite/{token}/sign-in/", {"provider": PROVIDER_ID})

    assert joined.status_code == 302
    vera = User.objects.get(username="vera-volunteer")
    assert _signed_in_as(client) == vera
    assert Membership.objects.get(project=second_project, user=vera).role == Role.RESEARCHER
    second.refresh_from_db()
    assert second.used_by == vera
    assert User.objects.filter(socialaccount__uid="vera-0001").count() == 1


@pytest.mark.django_db
def test_provider_username_that_looks_like_an_existing_account_is_refused(
    client, idp, lead, annotator, project
):
    invite, token = Invite.issue_for(project, Role.ANNOTATOR, lead)
    look_alike = annotator.username.title()  # "Ada-Annotator" beside "ada-annotator"
    assert look_alike != annotator.username
    idp.next_user = {"sub": "mallory-7", "preferred_username": look_alike}
    users_before = User.objects.count()

    refused = _through_provider(client, f"/invite/{token}/sign-in/", {"provider": PROVIDER_ID})

    assert refused.status_code == 400
    text = refused.content.decode()
    assert look_alike in text
    assert "differs from an existing one only by letter case" in text
    assert User.objects.count() == users_before
    assert _signed_in_as(client) is None
    assert not SocialAccount.objects.exists()
    invite.refresh_from_db()
    assert invite.used_at is None  # still usable, e.g. with a password
    assert idp.pkce_checked  # it did get as far as the provider's answer


@pytest.mark.django_db
def test_provider_sign_in_without_an_invite_makes_no_account(client, idp):
    idp.next_user = {"sub": "oscar-1", "preferred_username": "oscar-elsewhere"}
    refused = _through_provider(client, LOGIN_URL)
    assert refused.status_code == 403
    assert b"Ask a project lead for an invite" in refused.content
    assert not User.objects.filter(username="oscar-elsewhere").exists()
    assert _signed_in_as(client) is None


@pytest.mark.django_db
def test_invite_used_meanwhile_leaves_no_account(client, idp, lead, project):
    _, token = Invite.issue_for(project, Role.ANNOTATOR, lead)
    idp.next_user = {"sub": "late-1", "preferred_username": "late-comer"}
    start = client.post(f"/invite/{token}/sign-in/", {"provider": PROVIDER_ID})
    answer = requests.get(start["Location"], allow_redirects=False, timeout=10)
    # Someone else uses the link with a password while this one is at the provider.
    other = type(client)()
    used = other.post(
        f"/invite/{token}/", {"username": "quick-one", "password": "a sturdy passphrase 42"}
    )
    assert used.status_code == 302
    back = urlsplit(answer.headers["Location"])
    late = client.get(f"{back.path}?{back.query}")
    assert late.status_code == 410
    assert b"already been used" in late.content
    assert not User.objects.filter(username="late-comer").exists()


@pytest.mark.django_db
def test_unknown_provider_on_the_invite_page_is_a_400_naming_the_field(client, idp, lead, project):
    _, token = Invite.issue_for(project, Role.ANNOTATOR, lead)
    response = client.post(f"/invite/{token}/sign-in/", {"provider": "elsewhere"})
    assert response.status_code == 400
    assert response.content.startswith(b"provider:")


@pytest.mark.django_db
def test_the_client_secret_is_never_on_a_page(client, idp, lead, project):
    _, token = Invite.issue_for(project, Role.ANNOTATOR, lead)
    pages = [client.get("/accounts/login/"), client.get(f"/invite/{token}/")]
    assert all(b"University SSO" in page.content for page in pages)  # the probe can fire
    assert all(CLIENT_SECRET.encode() not in page.content for page in pages)


@pytest.mark.django_db
def test_without_providers_the_pages_are_as_before(client, settings, lead, project):
    settings.SOCIALACCOUNT_PROVIDERS = {}
    _, token = Invite.issue_for(project, Role.ANNOTATOR, lead)
    for url in ["/accounts/login/", f"/invite/{token}/"]:
        page = client.get(url)
        assert page.status_code == 200
        assert b'class="providers"' not in page.content
        directives = [d.strip() for d in page["Content-Security-Policy"].split(";")]
        assert "form-action 'self'" in directives  # no provider's host added
        assert b'type="password"' in page.content


@pytest.mark.django_db
def test_a_code_redeemed_without_the_right_pkce_verifier_signs_no_one_in(
    client, idp, lead, project, caplog
):
    _, token = Invite.issue_for(project, Role.ANNOTATOR, lead)
    idp.next_user = {"sub": "eve-1", "preferred_username": "eve-intercepts"}
    start = client.post(f"/invite/{token}/sign-in/", {"provider": PROVIDER_ID})
    answer = requests.get(start["Location"], allow_redirects=False, timeout=10)
    back = urlsplit(answer.headers["Location"])
    # The code is bound to another challenge: the verifier this session holds no longer fits.
    (grant,) = idp.codes.values()
    grant["challenge"] = "another-challenge"

    failed = client.get(f"{back.path}?{back.query}")

    assert idp.refused == ["PKCE code_verifier does not match the code_challenge"]
    assert failed.status_code == 401  # allauth's authentication error, on our page
    assert b"Sign-in failed" in failed.content
    assert not User.objects.filter(username="eve-intercepts").exists()
    assert _signed_in_as(client) is None
    assert CLIENT_SECRET not in caplog.text


@pytest.mark.django_db
def test_github_is_offered_when_configured(client, settings):
    settings.SOCIALACCOUNT_PROVIDERS = social_providers(
        {"GITHUB_CLIENT_ID": "Iv1.abc", "GITHUB_CLIENT_SECRET": "gh-secret-9d2"}
    )
    page = client.get("/accounts/login/")
    assert b"Sign in with GitHub" in page.content
    assert b'action="/accounts/github/login/' in page.content
    # The button's POST is redirected to GitHub: the page's CSP lets that form go there.
    assert "form-action 'self' https://github.com" in page["Content-Security-Policy"]
    assert b"gh-secret-9d2" not in page.content


# --- LOCAL_PASSWORDS=0: identity providers only, staff excepted on the admin's login page ----


@pytest.fixture
def no_passwords(settings, idp):
    settings.LOCAL_PASSWORDS = False
    return idp


@pytest.mark.django_db
def test_without_local_passwords_the_login_page_has_no_password_form_and_refuses_one(
    client, no_passwords, annotator
):
    page = client.get("/accounts/login/")
    assert b'type="password"' not in page.content
    assert b"Sign in with University SSO" in page.content
    refused = client.post(
        "/accounts/login/", {"username": annotator.username, "password": PASSWORD}
    )
    assert refused.status_code == 400
    assert b"Passwords are turned off" in refused.content
    assert _signed_in_as(client) is None
    # Nor does the API hand out a token for a password.
    token = client.post("/api/token/", {"username": annotator.username, "password": PASSWORD})
    assert token.status_code == 400
    assert "token" not in token.json()


@pytest.mark.django_db
def test_without_local_passwords_staff_still_sign_in_on_the_admin_login(client, no_passwords):
    User.objects.create_user("sam-staff", password=PASSWORD, is_staff=True)
    response = client.post(
        "/admin/login/?next=/admin/", {"username": "sam-staff", "password": PASSWORD}
    )
    assert response.status_code == 302
    assert _signed_in_as(client).username == "sam-staff"


@pytest.mark.django_db
def test_without_local_passwords_an_invite_takes_the_provider_only(
    client, no_passwords, lead, project
):
    _, token = Invite.issue_for(project, Role.ANNOTATOR, lead)
    page = client.get(f"/invite/{token}/")
    assert b'type="password"' not in page.content
    assert b"Join with University SSO" in page.content
    refused = client.post(
        f"/invite/{token}/", {"username": "pat-password", "password": "a sturdy passphrase 42"}
    )
    assert refused.status_code == 400
    assert not User.objects.filter(username="pat-password").exists()
    no_passwords.next_user = {"sub": "pia-1", "preferred_username": "pia-provider"}
    joined = _through_provider(client, f"/invite/{token}/sign-in/", {"provider": PROVIDER_ID})
    assert joined.status_code == 302
    assert Membership.objects.filter(project=project, user__username="pia-provider").exists()


@pytest.mark.django_db
def test_a_member_with_a_password_keeps_the_password_link(client, lead, project):
    client.force_login(lead)
    assert b"/accounts/password_change/" in client.get("/").content


@pytest.mark.django_db
def test_a_provider_that_does_not_answer_gets_a_page_not_a_500(client, settings, lead, project):
    with FakeOIDCProvider() as gone:
        server_url = gone.issuer  # a port that closes when the provider stops
    settings.SOCIALACCOUNT_PROVIDERS = social_providers(
        {
            "OIDC_SERVER_URL": server_url,
            "OIDC_CLIENT_ID": CLIENT_ID,
            "OIDC_CLIENT_SECRET": CLIENT_SECRET,
        }
    )
    _, token = Invite.issue_for(project, Role.ANNOTATOR, lead)
    for url, data in [
        ("/accounts/oidc/oidc/login/", {}),
        (f"/invite/{token}/sign-in/", {"provider": "oidc"}),
    ]:
        response = client.post(url, data)
        assert response.status_code == 502, url
        assert b"Sign-in failed" in response.content


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "/accounts/github/login/",
        "/accounts/github/login/callback/?code=x&state=y",
        "/accounts/oidc/nope/login/",
        "/accounts/oidc/nope/login/callback/?code=x&state=y",
    ],
)
def test_a_provider_that_is_not_configured_is_a_404(client, settings, url):
    settings.SOCIALACCOUNT_PROVIDERS = {}
    client.raise_request_exception = False
    assert client.get(url).status_code == 404
    assert client.post(url).status_code == 404
