"""The identity providers an operator configures through the environment (config.signin)."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.views.debug import SafeExceptionReporterFilter

from config.checks import check_some_sign_in
from config.signin import social_providers

KEYCLOAK = {
    "id": "keycloak",
    "name": "University SSO",
    "server_url": "https://sso.uni.example/realms/lab",
    "client_id": "annotator",
    "secret": "kc-secret-31",
}


def test_nothing_configured_means_no_providers():
    assert social_providers({}) == {}


def test_a_list_of_openid_connect_providers_and_github():
    gitlab = {**KEYCLOAK, "id": "gitlab", "name": "GitLab", "server_url": "https://gitlab.com"}
    providers = social_providers(
        {
            "OIDC_PROVIDERS": json.dumps([KEYCLOAK, gitlab]),
            "GITHUB_CLIENT_ID": "Iv1.abc",
            "GITHUB_CLIENT_SECRET": "gh-secret",
        }
    )
    apps = providers["openid_connect"]["APPS"]
    assert [(a["provider_id"], a["name"]) for a in apps] == [
        ("keycloak", "University SSO"),
        ("gitlab", "GitLab"),
    ]
    assert apps[0]["settings"] == {"server_url": "https://sso.uni.example/realms/lab"}
    assert apps[0]["client_id"] == "annotator" and apps[0]["secret"] == "kc-secret-31"
    assert providers["openid_connect"]["OAUTH_PKCE_ENABLED"] is True
    assert providers["github"]["APPS"] == [{"client_id": "Iv1.abc", "secret": "gh-secret"}]


def test_one_provider_through_single_variables():
    providers = social_providers(
        {
            "OIDC_SERVER_URL": "https://sso.uni.example/realms/lab",
            "OIDC_CLIENT_ID": "annotator",
            "OIDC_CLIENT_SECRET": "kc-secret-31",
            "OIDC_NAME": "Lab SSO",
        }
    )
    (app,) = providers["openid_connect"]["APPS"]
    assert (app["provider_id"], app["name"], app["client_id"]) == ("oidc", "Lab SSO", "annotator")
    assert "github" not in providers


@pytest.mark.parametrize(
    ("environ", "names"),
    [
        ({"OIDC_PROVIDERS": "[{"}, "OIDC_PROVIDERS is not JSON"),
        ({"OIDC_PROVIDERS": "{}"}, "must be a JSON list"),
        (
            {"OIDC_PROVIDERS": json.dumps([{**KEYCLOAK, "secret": ""}])},
            "OIDC_PROVIDERS entry 1: secret is missing",
        ),
        (
            {"OIDC_PROVIDERS": json.dumps([KEYCLOAK, {**KEYCLOAK, "server_url": "ftp://x"}])},
            "OIDC_PROVIDERS entry 2: server_url must be an http(s) URL",
        ),
        (
            {"OIDC_PROVIDERS": json.dumps([{**KEYCLOAK, "scret": "typo"}])},
            "entry 1: unknown keys scret",
        ),
        (
            {"OIDC_PROVIDERS": json.dumps([{**KEYCLOAK, "server_url": "http://sso.uni.example"}])},
            "OIDC_PROVIDERS entry 1: server_url must use https",
        ),
        (
            {
                "OIDC_SERVER_URL": "http://10.0.0.7:8080/realms/lab",
                "OIDC_CLIENT_ID": "a",
                "OIDC_CLIENT_SECRET": "kc-secret-31",
            },
            "OIDC_SERVER_URL: server_url must use https",
        ),
        ({"OIDC_PROVIDERS": json.dumps([KEYCLOAK, KEYCLOAK])}, "every id must be unique"),
        ({"OIDC_SERVER_URL": "https://sso.example", "OIDC_CLIENT_ID": "a"}, "secret is missing"),
        ({"GITHUB_CLIENT_ID": "Iv1.abc"}, "GITHUB_CLIENT_SECRET"),
    ],
)
def test_a_bad_configuration_fails_naming_the_variable_never_the_secret(environ, names):
    with pytest.raises(ImproperlyConfigured) as refused:
        social_providers(environ)
    assert names in str(refused.value)
    assert "kc-secret-31" not in str(refused.value)


@pytest.mark.parametrize(
    "server_url",
    [
        "http://127.0.0.1:8081/realms/test",
        "http://127.8.9.10/issuer",
        "http://[::1]:9000",
        "http://localhost:8080",
        "http://LocalHost",
    ],
)
def test_plain_http_is_accepted_only_to_this_machine(server_url):
    """The test provider runs on a loopback address over http: nothing crosses a network."""
    providers = social_providers(
        {"OIDC_PROVIDERS": json.dumps([{**KEYCLOAK, "server_url": server_url}])}
    )
    assert providers["openid_connect"]["APPS"][0]["settings"] == {"server_url": server_url}


@pytest.mark.parametrize(
    "server_url",
    ["http://sso.uni.example", "http://128.0.0.1", "http://localhost.evil.example", "http://[::2]"],
)
def test_plain_http_to_another_host_is_refused(server_url):
    with pytest.raises(ImproperlyConfigured, match="OIDC_PROVIDERS entry 1: server_url must use"):
        social_providers({"OIDC_PROVIDERS": json.dumps([{**KEYCLOAK, "server_url": server_url}])})


def test_the_secrets_are_masked_on_django_error_reports(settings):
    settings.SOCIALACCOUNT_PROVIDERS = social_providers(
        {
            "OIDC_PROVIDERS": json.dumps([KEYCLOAK]),
            "GITHUB_CLIENT_ID": "Iv1.abc",
            "GITHUB_CLIENT_SECRET": "gh-secret-5",
        }
    )
    shown = repr(SafeExceptionReporterFilter().get_safe_settings()["SOCIALACCOUNT_PROVIDERS"])
    assert "https://sso.uni.example/realms/lab" in shown  # the probe: the setting is there
    assert "kc-secret-31" not in shown and "gh-secret-5" not in shown


def test_passwords_off_without_a_provider_is_a_warning(settings):
    settings.LOCAL_PASSWORDS = False
    settings.SOCIALACCOUNT_PROVIDERS = {}
    assert [w.id for w in check_some_sign_in(None)] == ["annotator.W002"]
    settings.SOCIALACCOUNT_PROVIDERS = social_providers(
        {"GITHUB_CLIENT_ID": "Iv1.abc", "GITHUB_CLIENT_SECRET": "gh-secret-5"}
    )
    assert check_some_sign_in(None) == []
    settings.LOCAL_PASSWORDS = True
    settings.SOCIALACCOUNT_PROVIDERS = {}
    assert check_some_sign_in(None) == []
