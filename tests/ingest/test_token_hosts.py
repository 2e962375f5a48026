"""Forge tokens go only to the forges' own API hosts and to hosts an admin listed for them."""

import pytest

from ingest.forges import client_for, token_allowed
from ingest.models import Repository


@pytest.mark.parametrize(
    ("forge", "api_url", "allowed"),
    [
        ("github", "https://api.github.com", True),
        ("gitee", "https://gitee.com/api/v5", True),
        ("gitlab", "https://gitlab.com/api/v4", True),
        ("github", "https://api.github.com.attacker.example", False),
        ("github", "https://gitee.com/api/v5", False),
        ("gitlab", "http://169.254.169.254/api/v4", False),
        ("github", "http://api.github.com", False),  # never in clear text
        ("github", "https://ghe.lab.example/api/v3", True),  # listed below, for both
        ("gitlab", "https://tokens-only.example/api/v4", False),  # not an allowed API host
    ],
)
def test_token_allowed(settings, forge, api_url, allowed):
    settings.FORGE_TOKEN_HOSTS = ["ghe.lab.example", "tokens-only.example"]
    settings.FORGE_API_HOSTS = ["ghe.lab.example"]
    assert token_allowed(forge, api_url) is allowed


@pytest.mark.django_db
def test_a_lead_added_repository_on_another_host_gets_no_token(settings, fake):
    settings.FORGE_TOKEN_HOSTS = []
    settings.FORGE_TOKENS = {"github": "ghp_SERVER_SECRET", "gitee": "", "gitlab": ""}
    repo = Repository.objects.create(
        forge="github", api_url=fake.api_url("github"), owner="o", name="r"
    )
    fake.repo("github", "o", "r").add_issue(1)

    def sent_headers(client) -> list[dict]:
        sent: list[dict] = []
        client.session.hooks["response"].append(lambda r, *a, **k: sent.append(r.request.headers))
        list(client.iter_pages(client.issues_url(None)))
        return sent

    unlisted = sent_headers(client_for(repo))
    assert unlisted and all("Authorization" not in h for h in unlisted)
    # The same repository on a listed host does get the token.
    settings.FORGE_TOKEN_HOSTS = ["127.0.0.1"]
    listed = sent_headers(client_for(repo))
    assert listed and all(h["Authorization"] == "Bearer ghp_SERVER_SECRET" for h in listed)
