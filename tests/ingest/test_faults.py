"""Each fault the fake forge injects ends as the spec says: recovered, or failed clearly."""

from __future__ import annotations

import time

import pytest

from ingest.models import Comment, Issue
from ingest.runs import start_sync
from ingest.steps import run_inline


@pytest.fixture
def megatron(fake, make_repo):
    forge, repo = make_repo("github", "NVIDIA", "Megatron-LM")
    for n in range(1, 251):
        forge.add_issue(n, created=f"2024-01-01T{n // 60:02d}:{n % 60:02d}:00Z", comments=1)
    return forge, repo


def _assert_complete(run, repo):
    assert run.status == "done", run.errors
    assert Issue.objects.filter(repository=repo).count() == 250
    assert Comment.objects.filter(issue__repository=repo).count() == 250


@pytest.mark.parametrize("kind", ["502", "reset", "truncated", "null"])
def test_transient_faults_are_retried(fake, megatron, kind):
    _, repo = megatron
    fake.inject(kind, path_contains="page=2")
    fake.inject(kind, path_contains="/issues/comments")
    run = run_inline(start_sync(repo, enqueue=False))
    _assert_complete(run, repo)
    assert run.retries == 2 and run.requests == 6 + 2


def test_slow_response_past_the_timeout_is_retried(fake, megatron, settings):
    settings.INGEST_READ_TIMEOUT = 0.3
    _, repo = megatron
    fake.inject("timeout", path_contains="page=3", seconds=0.8)
    run = run_inline(start_sync(repo, enqueue=False))
    _assert_complete(run, repo)
    assert run.retries == 1


def test_secondary_limit_with_retry_after_waits_that_long(fake, megatron):
    _, repo = megatron
    fake.inject("secondary", path_contains="page=2", seconds=1, status=429)
    waits: list[float] = []

    # The fake forge lifts a secondary limit at the next request, so the wait is recorded,
    # not slept: its length is what this checks.
    run = run_inline(start_sync(repo, enqueue=False), sleep=lambda s: waits.append(s))
    _assert_complete(run, repo)
    assert len(waits) == 1 and 0.5 < waits[0] <= 1.0
    assert run.rate_limit_waits == 1
    assert "secondary rate limit" in run.errors[0]["message"]


def test_secondary_limit_without_retry_after_backs_off(fake, megatron):
    _, repo = megatron
    fake.inject("secondary", path_contains="page=2", times=2, retry_after=False)
    waits: list[float] = []
    run = run_inline(start_sync(repo, enqueue=False), sleep=lambda s: waits.append(s))
    _assert_complete(run, repo)
    assert len(waits) == 2 and waits[1] > waits[0] * 1.5  # exponential


@pytest.mark.parametrize("status", [403, 429])
def test_primary_quota_exhausted_waits_for_the_reset(fake, megatron, status):
    _, repo = megatron
    fake.set_quota("github", limit=4, window=1.5, status=status)
    quota = fake.quota["github"]
    waits: list[tuple[float, float]] = []  # (the end of the client's wait, the fake's reset)

    def sleep(seconds: float) -> None:
        # Really wait for the fake's reset, but not the client's second of margin after it:
        # that the client asked to wait past the reset is checked below.
        waits.append((time.time() + seconds, quota.reset_at))
        time.sleep(min(seconds, max(0.0, quota.reset_at - time.time())))

    started = time.monotonic()
    run = run_inline(start_sync(repo, enqueue=False), sleep=sleep)
    _assert_complete(run, repo)
    assert run.rate_limit_waits >= 1 and time.monotonic() - started >= 1.0
    assert waits and all(end >= reset for end, reset in waits)
    assert fake.count(status=status) == run.rate_limit_waits
    assert "quota exhausted" in run.errors[0]["message"]


def test_persistent_server_errors_fail_clearly_keeping_earlier_pages(fake, megatron, settings):
    _, repo = megatron
    settings.INGEST_MAX_RETRIES = 2
    # Issues 201-250 at every page size: page 3 of 100, page 5 of 50, page 9 of 25.
    for page, size in ((3, 100), (5, 50), (9, 25)):
        fake.inject("502", "/issues?", times=99, query={"page": page, "per_page": size})
    run = run_inline(start_sync(repo, enqueue=False))
    assert run.status == "failed"
    message = run.errors[-1]["message"]
    assert "502" in message and "page=3" in message and "(per_page 100, 50, 25)" in message
    assert Issue.objects.filter(repository=repo).count() == 200  # pages 1 and 2 kept
    assert run.pages == 2 and "page=3" in run.parts.get().next_url
    # Two tries at 100, two at 50, then the three a page may have, at 25.
    assert fake.count(status=502) == 2 + 2 + 3


def test_a_page_that_keeps_failing_at_100_is_fetched_in_smaller_pages(fake, megatron):
    _, repo = megatron
    fake.inject("502", "/issues?", times=99, query={"page": 2, "per_page": 100})
    fake.inject("502", "/issues?", times=99, query={"page": 3, "per_page": 50})
    run = run_inline(start_sync(repo, enqueue=False))
    _assert_complete(run, repo)
    pages = [
        (r.query.get("page", "1"), r.query["per_page"], r.status)
        for r in fake.requests
        if r.path.endswith("/issues")
    ]
    assert pages == [
        ("1", "100", 200),
        ("2", "100", 502), ("2", "100", 502),  # issues 101-200 ...
        ("3", "50", 502), ("3", "50", 502),  # ... 101-150 at 50 fail too ...
        ("5", "25", 200), ("6", "25", 200),  # ... so at 25, up to 150,
        ("4", "50", 200),  # 151-200 at 50,
        ("3", "100", 200),  # and back to 100 where the position allows.
    ]  # fmt: skip
    assert run.retries == 4 and run.pages == 1 + 3 + 1 + 3  # 3 comment pages


def test_bad_credentials_fail_at_once_without_leaking_the_token(fake, megatron, settings):
    _, repo = megatron
    settings.FORGE_TOKENS = {"github": "ghp_WRONGtoken", "gitee": "", "gitlab": ""}
    fake.tokens["github"] = "ghp_righttoken"
    run = run_inline(start_sync(repo, enqueue=False))
    assert run.status == "failed" and fake.count() == 1
    assert "401" in run.errors[0]["message"] and "github token" in run.errors[0]["message"]
    assert "ghp_" not in str(run.errors)


def test_missing_repository_fails_clearly(fake, make_repo):
    _, repo = make_repo("github", "nobody", "nothing")
    del fake.repos[("github", "nobody", "nothing")]
    run = run_inline(start_sync(repo, enqueue=False))
    assert run.status == "failed" and run.errors[0]["message"].startswith("404")


def test_gitee_spurious_404_on_a_comment_page_is_retried(fake, make_repo, settings):
    settings.FORGE_TOKENS = {"github": "", "gitee": "gitee-TOKEN-xyz", "gitlab": ""}
    forge, repo = make_repo("gitee", "ascend", "MindSpeed")
    for i in range(30):
        forge.add_issue(f"IC{i:04d}", created=f"2024-05-01T00:00:{i:02d}Z", comments=2)
    fake.inject("404", path_contains="/issues/comments")
    run = run_inline(start_sync(repo, enqueue=False))
    assert run.status == "done", run.errors
    assert Comment.objects.filter(issue__repository=repo).count() == 60
    # …but a listing that keeps answering 404 fails, and the token stays out of the log.
    fake.inject("404", path_contains="/issues/comments", times=9)
    again = run_inline(start_sync(repo, full=True, enqueue=False))
    assert again.status == "failed" and "gitee-TOKEN-xyz" not in str(again.errors)
    assert "access_token" not in str(again.errors)


def test_gitlab_issue_whose_notes_are_gone_is_skipped_and_logged(fake, make_repo):
    forge, repo = make_repo("gitlab", "group", "project")
    for n in range(1, 6):
        forge.add_issue(n, created=f"2024-01-01T00:00:0{n}Z", comments=1)
    fake.inject("404", path_contains="/issues/3/notes", times=9)
    run = run_inline(start_sync(repo, enqueue=False))
    assert run.status == "done"
    assert Comment.objects.filter(issue__repository=repo).count() == 4
    assert "comments of #3 skipped: 404" in run.errors[0]["message"]
