"""Each forge token goes only to its own forge: the forge's public API host on https port 443,
or an exact origin (scheme, host, port) an admin bound to that very forge in FORGE_TOKEN_HOSTS
(`github=host[:port]`, `gitlab=…`, `gitee=…`). Issue #20, F3: a host listed for one forge used to
receive every forge's token, on any port.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from ingest.forges import client_for, token_allowed
from ingest.hosts import TokenOrigin, parse_token_host
from ingest.models import Repository
from tests.fakeforge import FakeForge, RequestRecord

ROOT = Path(__file__).resolve().parents[2]
FORGES = ("github", "gitlab", "gitee")
TOKENS = {
    "github": "ghp_GitHubOnlyT0kenAbcdefghijklmnopqrstu",
    "gitee": "0123456789abcdef0123456789abcdef",
    "gitlab": "glpat-GitLabOnlyToken-xyz123",
}


@pytest.mark.parametrize(
    ("forge", "api_url", "allowed"),
    [
        # The public hosts keep their own token, on https port 443 only.
        ("github", "https://api.github.com", True),
        ("github", "https://api.github.com:443", True),
        ("gitee", "https://gitee.com/api/v5", True),
        ("gitlab", "https://gitlab.com/api/v4", True),
        ("github", "https://gitee.com/api/v5", False),
        ("gitee", "https://api.github.com", False),
        ("gitlab", "https://api.github.com", False),
        ("github", "https://gitlab.com/api/v4", False),
        ("github", "https://api.github.com:8193", False),  # I2
        ("github", "http://api.github.com", False),  # never in clear text
        ("github", "https://api.github.com.attacker.example", False),
        ("gitlab", "http://169.254.169.254/api/v4", False),
        # Listed for GitHub: GitHub's token only, on that origin only.
        ("github", "https://ghe.lab.example/api/v3", True),
        ("gitlab", "https://ghe.lab.example/api/v4", False),
        ("gitee", "https://ghe.lab.example/api/v5", False),
        ("github", "https://ghe.lab.example:8443/api/v3", False),
        # Listed for GitLab on port 8443: not on 443, and never GitHub's.
        ("gitlab", "https://gitlab.lab.example:8443/api/v4", True),
        ("gitlab", "https://gitlab.lab.example/api/v4", False),
        ("github", "https://gitlab.lab.example:8443/api/v4", False),
        # Listed for tokens but not as an API host: no request, so no token.
        ("gitlab", "https://tokens-only.example/api/v4", False),
    ],
)
def test_a_token_goes_only_to_origins_of_its_own_forge(settings, forge, api_url, allowed):
    settings.FORGE_TOKEN_HOSTS = [
        "github=ghe.lab.example",
        "gitlab=gitlab.lab.example:8443",
        "gitlab=tokens-only.example",
    ]
    settings.FORGE_API_HOSTS = ["ghe.lab.example", "gitlab.lab.example"]
    assert token_allowed(forge, api_url) is allowed


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("github=ghe.lab.example", TokenOrigin("github", "https", "ghe.lab.example", 443)),
        ("GitLab = gl.example:8443", TokenOrigin("gitlab", "https", "gl.example", 8443)),
        ("gitee=http://127.0.0.1:9000", TokenOrigin("gitee", "http", "127.0.0.1", 9000)),
        ("gitlab=http://gl.example", TokenOrigin("gitlab", "http", "gl.example", 80)),
    ],
)
def test_token_host_entries_name_a_forge_and_an_exact_origin(entry, expected):
    assert parse_token_host(entry) == expected


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("ghe.lab.example", "'ghe.lab.example' names no forge"),  # the old form
        ("127.0.0.1:8080", "'127.0.0.1:8080' names no forge"),
        ("bitbucket=bb.example", "'bitbucket=bb.example' names no forge"),
        ("github=ghe.example/api", "is not a host, host:port"),
        ("github=gitee.com", "gitee.com is gitee's public host"),
        ("gitee=api.github.com", "api.github.com is github's public host"),
        ("gitlab=github.com", "github.com is github's public host"),
    ],
)
def test_a_bad_token_host_entry_is_a_configuration_error_naming_it(entry, why):
    with pytest.raises(ImproperlyConfigured, match=f"FORGE_TOKEN_HOSTS: .*{why}"):
        parse_token_host(entry)


@pytest.mark.slow  # starts `manage.py check` in a process
def test_a_process_refuses_to_start_with_an_old_style_entry(tmp_path):
    """Not only `manage.py check`: IngestConfig.ready runs in every process (gunicorn, Celery)."""
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
    env = {**base, "DATA_DIR": str(tmp_path), "DEBUG": "1"}

    def check(hosts: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", "check"],
            cwd=ROOT,
            env={**env, "FORGE_TOKEN_HOSTS": hosts},
            capture_output=True,
            text=True,
            timeout=120,
        )

    good = check("github=ghe.lab.example,gitlab=http://gl.lab.example:8080")
    assert good.returncode == 0, good.stderr
    old = check("github=ghe.lab.example,gl.lab.example")
    assert old.returncode != 0
    assert "ImproperlyConfigured: FORGE_TOKEN_HOSTS: 'gl.lab.example' names no forge" in (
        old.stderr
    )


def credentials(record: RequestRecord) -> set[str]:
    """The tokens a request carried, in any of the three forges' ways."""
    headers = {k.lower(): v for k, v in record.sent.items()}
    sent = {
        headers.get("authorization", "").removeprefix("Bearer "),
        headers.get("private-token", ""),
        record.query.get("access_token", ""),
    }
    return sent - {""}


def fetch_issues(forge: str, api_url: str) -> None:
    """One listing of a repository of `forge` at `api_url`, as a sync would fetch it."""
    repository = Repository(forge=forge, api_url=api_url, owner="acme", name="engine")
    client = client_for(repository)
    pages = list(client.iter_pages(client.issues_url(None)))
    assert pages and pages[0].items  # the request was answered: the probe reached the listener


def test_three_listeners_each_receive_only_their_own_forges_token(settings):
    settings.FORGE_TOKENS = dict(TOKENS)
    settings.FORGE_API_HOSTS = ["http://127.0.0.1"]  # any port may be fetched …
    with contextlib.ExitStack() as stack:
        listeners = {f: stack.enter_context(FakeForge()) for f in FORGES}
        elsewhere = stack.enter_context(FakeForge())  # right host, a port listed for no forge
        # … but each token is bound to one listener's origin.
        settings.FORGE_TOKEN_HOSTS = [
            entry for f, listener in listeners.items() for entry in listener.token_hosts(f)
        ]
        for listener in [*listeners.values(), elsewhere]:
            for forge in FORGES:
                listener.repo(forge, "acme", "engine").add_issue(1)
                fetch_issues(forge, listener.api_url(forge))

        for listener_forge, listener in listeners.items():
            for forge in FORGES:
                sent = [credentials(r) for r in listener.requests if f"/{forge}/" in r.path]
                assert sent, f"no {forge} request reached the {listener_forge} listener"
                # Its own forge's repository brings its token; another forge's brings none.
                expected = {TOKENS[forge]} if forge == listener_forge else set()
                assert all(s == expected for s in sent), (listener_forge, forge, sent)
        assert len(elsewhere.requests) == 3
        assert all(credentials(r) == set() for r in elsewhere.requests)
