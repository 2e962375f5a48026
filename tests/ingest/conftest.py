"""Fixtures of the ingest tests: a running fake forge and repositories that point at it."""

from __future__ import annotations

import pytest

from ingest.keywords import load_study_keyword_sets
from ingest.models import KeywordSet, Repository
from tests.fakeforge import FakeForge, FakeRepo


@pytest.fixture
def fake(settings):
    with FakeForge() as forge:
        # The fake forge stands in for the real hosts: each token bound to its origin.
        settings.FORGE_TOKEN_HOSTS = forge.token_hosts()
        yield forge


@pytest.fixture(autouse=True)
def quick_retries(settings):
    # Real backoff is seconds; the behaviour is the same at a hundredth of it.
    settings.INGEST_BACKOFF_SECONDS = 0.01
    settings.INGEST_READ_TIMEOUT = 1.0
    settings.INGEST_SECONDARY_WAIT_SECONDS = 0.2
    settings.FORGE_TOKENS = {"github": "", "gitee": "", "gitlab": ""}
    # The fake forge stands in for the real hosts: an admin's explicit allowlist, plain http
    # (its tokens are bound to its port by the `fake` fixture).
    settings.FORGE_TOKEN_HOSTS = []
    settings.FORGE_API_HOSTS = ["http://127.0.0.1"]


@pytest.fixture
def study_keyword_sets(db):
    """The sets the migration ships (reloaded: a transactional test elsewhere may flush them)."""
    load_study_keyword_sets(KeywordSet)


@pytest.fixture
def make_repo(fake, db, study_keyword_sets):
    def make(forge: str, owner: str, name: str, **fields) -> tuple[FakeRepo, Repository]:
        repo = Repository.objects.create(
            forge=forge, api_url=fake.api_url(forge), owner=owner, name=name, **fields
        )
        return fake.repo(forge, owner, name), repo

    return make
