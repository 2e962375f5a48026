"""Forge tokens never leave their host: not in a run's log, its page, the CLI, the server log,
nor in a request to another host that a forge's `Link` header names.

Each forge travels its token differently (GitHub `Authorization: Bearer`, GitLab
`PRIVATE-TOKEN`, Gitee `?access_token=`); the configured GitLab token here has no token shape
at all, so only redaction by the configured value can catch it.
"""

from __future__ import annotations

import io
import json
import logging
from urllib.parse import quote

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from ingest.forges import redact
from ingest.models import Repository, SyncRun
from ingest.runs import start_sync
from ingest.steps import run_inline
from tests.fakeforge import Recorder

TOKENS = {
    "github": "ghp_R3alLookingT0kenAbcdefghijklmnopqrstu",
    "gitee": "5f3c8e1a9b7d4c2e6f0a1b3c5d7e9f21",
    "gitlab": "unshaped secret/value+1",
}


@pytest.fixture
def tokens(settings, fake):
    """The server has a token for every forge, and the fake forge demands it."""
    settings.FORGE_TOKENS = dict(TOKENS)
    fake.tokens.update(TOKENS)
    return TOKENS


def leaks(token: str, text: str) -> bool:
    return any(form in text for form in (token, quote(token, safe=""), quote(token)))


def credential(record) -> str:
    """What a request the fake forge recorded carried as a credential, in any of the ways."""
    headers = {k.lower(): v for k, v in record.sent.items()}
    return " ".join(
        [headers.get("authorization", ""), headers.get("private-token", ""),
         record.query.get("access_token", "")]
    )  # fmt: skip


def uses(project, repo: Repository) -> None:
    project.scope = {"repository_ids": [repo.pk]}
    project.save()


@pytest.mark.parametrize(
    "text",
    [
        "Bad credentials for ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "token github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "oauth gho_abcdefghijklmnopqrstuvwxyz0123456789 expired",
        "GitLab says glpat-AbCdEfGhIjKlMnOpQrSt is revoked",
        "GET /api/v5/repos/a/b/issues?page=2&access_token=0123456789abcdef0123456789abcdef",
        "GET /api/v5/repos/a/b/issues?access_token=short-and-odd&page=2",
        "{'Authorization': 'Bearer not-a-known-shape', 'Accept': 'application/json'}",
        "Authorization: token plainvalue123",
        '{"PRIVATE-TOKEN": "whatever-it-is"}',
        "private_token%3Dencoded-value",
    ],
)
def test_redact_removes_tokens_by_shape_and_by_the_name_they_travel_under(settings, text):
    settings.FORGE_TOKENS = {"github": "", "gitee": "", "gitlab": ""}
    secret = text.split("ghp_")[-1] if "ghp_" in text else None
    out = redact(text)
    assert "***" in out
    for value in [
        "abcdefghijklmnopqrstuvwxyz0123456789",
        "11ABCDEFG0123456789",
        "AbCdEfGhIjKlMnOpQrSt",
        "0123456789abcdef0123456789abcdef",
        "short-and-odd",
        "not-a-known-shape",
        "plainvalue123",
        "whatever-it-is",
        "encoded-value",
    ]:
        assert value not in out, (value, out)
    assert secret is None or secret not in out
    # What is not a secret stays readable.
    assert ("page=2" in out) == ("page=2" in text)
    assert ("application/json" in out) == ("application/json" in text)


def test_redact_removes_configured_tokens_of_any_shape_raw_and_url_encoded(settings):
    settings.FORGE_TOKENS = {"github": "", "gitee": "", "gitlab": "unshaped secret/value+1"}
    text = (
        "echo: unshaped secret/value+1 and unshaped%20secret%2Fvalue%2B1"
        " and unshaped+secret%2Fvalue%2B1"
    )
    out = redact(text)
    assert "secret" not in out and out.count("***") == 3
    assert redact("a word", ("word",)) == "a ***"  # a client's own token, passed in


@pytest.mark.parametrize("forge", ["github", "gitee", "gitlab"])
def test_an_error_echoing_the_credentials_reaches_no_page_cli_or_log(
    forge, tokens, fake, project, lead, client, study_keyword_sets, caplog
):
    token = tokens[forge]
    fake.repo(forge, "acme", "engine").add_issue(1)
    fake.inject("echo", "/issues")
    out = io.StringIO()
    caplog.set_level(logging.DEBUG)
    with pytest.raises(CommandError, match="failed"):
        call_command(
            "sync", f"{forge}:acme/engine", "--api-url", fake.api_url(forge), "--wait", stdout=out
        )
    # The forge did get the token, and its error body quoted the request back.
    first = fake.requests[0]
    assert first.status == 422
    assert token in credential(first)

    run = SyncRun.objects.get(repository__owner="acme")
    stored = json.dumps(run.errors) + json.dumps(run.figures(), default=str)
    assert "422 Validation Failed" in stored and not leaks(token, stored)

    printed = out.getvalue()
    assert "Validation Failed" in printed and not leaks(token, printed)

    uses(project, run.repository)
    client.force_login(lead)
    page = client.get(reverse("sync_run", args=[run.pk])).content.decode()
    fragment = client.get(
        reverse("sync_run", args=[run.pk]), headers={"HX-Request": "true"}
    ).content.decode()
    assert 'id="run-errors"' in page and "Validation Failed" in page
    assert not leaks(token, page) and not leaks(token, fragment)

    assert "Validation Failed" in caplog.text and not leaks(token, caplog.text)


def test_a_run_stored_before_redaction_shows_no_token(tokens, make_repo, project, lead, client):
    _, repo = make_repo("gitee", "ascend", "MindSpeed")
    run = SyncRun.objects.create(
        repository=repo,
        status="failed",
        errors=[
            {"at": "2024-01-01T00:00:00Z", "message": f"422 at ?access_token={TOKENS['gitee']}"}
        ],
    )
    uses(project, repo)
    client.force_login(lead)
    page = client.get(reverse("sync_run", args=[run.pk])).content.decode()
    assert "422 at ?access_token=***" in page and TOKENS["gitee"] not in page


@pytest.mark.parametrize("forge", ["github", "gitee", "gitlab"])
@pytest.mark.parametrize("other_host", ["127.0.0.1", "localhost"])
def test_a_next_link_to_another_host_is_refused_and_no_token_reaches_it(
    forge, other_host, tokens, fake, make_repo
):
    forge_repo, repo = make_repo(forge, "acme", "engine")
    for n in range(1, 151):  # two pages of 100
        forge_repo.add_issue(n, created=f"2024-01-01T00:{n // 60:02d}:{n % 60:02d}Z")
    with Recorder() as other:
        fake.link_base = other.url(other_host)  # every Link header points there
        fake.gitee_link = True  # Gitee sends Link headers only when asked
        run = run_inline(start_sync(repo, enqueue=False))
        assert other.requests == [] and not leaks(tokens[forge], other.seen())
    assert run.status == SyncRun.Status.FAILED
    log = " ".join(e["message"] for e in run.errors)
    assert f"the next page link leads to another host (http://{other_host}:{other.port}" in log
    assert "refused, no request sent there" in log
    # The first page came from the forge itself, with its token.
    assert fake.count("/issues", status=200) == 1
    assert tokens[forge] in credential(fake.requests[0])


def test_urllib3_debug_log_of_a_gitee_url_has_no_token(tokens, fake, make_repo, caplog):
    forge_repo, repo = make_repo("gitee", "ascend", "MindSpeed")
    forge_repo.add_issue("IA0001")
    caplog.set_level(logging.DEBUG, logger="urllib3")
    run = run_inline(start_sync(repo, enqueue=False))
    assert run.status == SyncRun.Status.DONE
    assert "access_token=***" in caplog.text  # urllib3 did log the URL …
    assert not leaks(TOKENS["gitee"], caplog.text)  # … without the token


@pytest.mark.parametrize(
    "module", ["ingest.runs", "ingest.steps", "ingest.storage", "ingest.hydration", "ingest.tasks"]
)
def test_every_ingest_job_that_logs_redacts_a_token_in_its_log(module, caplog):
    """The sync was split into modules, each logging under its own name: a filter on the
    `ingest` logger would not see their records, so each must carry its own."""
    import importlib

    log = importlib.import_module(module).log
    caplog.set_level(logging.INFO, logger=module)
    log.warning("forge answered: Bad credentials for %s", TOKENS["github"])
    assert "Bad credentials" in caplog.text
    assert not leaks(TOKENS["github"], caplog.text)
