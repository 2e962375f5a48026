"""Four Celery workers sync four repositories of one forge whose rate limit is small: the limit
is a budget shared by all of them in Redis (ingest.budget), so the forge never refuses a
request, no window serves more than the limit, and every sync completes.

The fake forge counts its quota per window and refuses a request over it with 403 and
`X-RateLimit-Remaining: 0`, as GitHub does (../shared/reference/forge-apis.md); each answer
names its window by `X-RateLimit-Reset`, by which the requests are grouped. The same scenario
with the shared budget turned off (each worker reading only its own answers' headers) is run
too, to show the fake forge does refuse what a worker alone cannot see coming.
"""

from __future__ import annotations

from collections import Counter

import pytest

from ingest.models import Issue, SyncRun
from ingest.runs import start_sync
from tests.ingest.test_worker import start_worker, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
__all__ = ["start_worker"]

LIMIT = 6  # requests per window
WINDOW = 1.5  # seconds
REPOSITORIES = 4
ISSUES = 250  # three pages of 100 each


def _served_per_window(fake) -> Counter:
    return Counter(r.headers.get("X-RateLimit-Reset") for r in fake.requests if r.status < 400)


def _sync_four(fake, make_repo, start_worker, budget: bool) -> list[int]:
    fake.set_quota("github", limit=LIMIT, window=WINDOW)
    repos = []
    for n in range(REPOSITORIES):
        forge, repo = make_repo("github", "NVIDIA", f"Megatron-LM-{n}")
        for i in range(1, ISSUES + 1):
            forge.add_issue(i, created=f"2024-01-01T{i // 60:02d}:{i % 60:02d}:00Z")
        repos.append(repo)
    env = {"FORGE_SHARED_BUDGET": "1" if budget else "0"}
    for n in range(4):
        start_worker(f"budget{n}", env=env)
    return [start_sync(repo, parts=1).pk for repo in repos]


def test_four_workers_never_exceed_the_forges_limit_and_finish(fake, make_repo, start_worker):
    runs = _sync_four(fake, make_repo, start_worker, budget=True)

    def finished() -> bool:
        return not SyncRun.objects.filter(pk__in=runs, status__in=SyncRun.ACTIVE).exists()

    wait_for(finished, 120, "the four syncs to end")

    for run in SyncRun.objects.filter(pk__in=runs):
        assert run.status == "done", run.errors
        assert Issue.objects.filter(repository=run.repository).count() == ISSUES
    refused = [r for r in fake.requests if r.status >= 400]
    assert refused == [], [(r.path, r.status) for r in refused]
    served = _served_per_window(fake)
    assert max(served.values()) <= LIMIT, served
    # More than two windows' worth of requests: the limit was what the workers waited for.
    assert sum(served.values()) > 2 * LIMIT and len(served) >= 3, served
    assert SyncRun.objects.filter(pk__in=runs, rate_limit_waits__gt=0).exists()


def test_without_the_shared_budget_the_forge_refuses_requests(fake, make_repo, start_worker):
    # Each worker knows only what its own answers said: together they overrun the limit.
    _sync_four(fake, make_repo, start_worker, budget=False)
    wait_for(lambda: fake.count(status=403) > 0, 60, "the forge to refuse a request")
