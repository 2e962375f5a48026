"""What a sync tells Prometheus: requests per forge and status, and the quota left.

A sync of Megatron-LM against the fake forge, which answers one page with a 502 and counts
every answer it sends (the reference the metrics are checked against).
"""

from __future__ import annotations

from ingest.runs import start_sync
from ingest.steps import run_inline
from lib import metrics
from tests.metrics_helpers import value

REQUESTS = "annotator_forge_requests_total"
QUOTA = "annotator_forge_quota_remaining"


def _text() -> str:
    return metrics.exposition(scrape_gauges=False)[0].decode()


def test_forge_requests_are_counted_by_status_and_the_quota_left_is_shown(fake, make_repo):
    forge, repo = make_repo("github", "NVIDIA", "Megatron-LM")
    for n in range(1, 251):
        forge.add_issue(n, created=f"2024-01-01T{n // 60:02d}:{n % 60:02d}:00Z", comments=1)
    fake.set_quota("github", limit=500, window=3600)
    fake.inject("502", path_contains="page=2")
    before = _text()
    run = run_inline(start_sync(repo, enqueue=False))
    assert run.status == "done", run.errors
    after = _text()
    ok = value(after, REQUESTS, forge="github", status="200") - value(
        before, REQUESTS, forge="github", status="200"
    )
    failed = value(after, REQUESTS, forge="github", status="502") - value(
        before, REQUESTS, forge="github", status="502"
    )
    assert ok == fake.count(status=200) > 0
    assert failed == fake.count(status=502) == 1
    assert value(after, QUOTA, forge="github") == fake.quota["github"].remaining < 500
