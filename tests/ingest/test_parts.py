"""A run split into parts: every item stored once, few extra requests, one live task a part."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
import requests
from django.db import connection

from ingest.models import Comment, Issue, SyncPart
from ingest.runs import start_sync
from ingest.steps import run_inline, step_part

START = datetime(2024, 1, 1, tzinfo=UTC)


def _spread(forge, n: int, comments) -> None:
    """n issues updated an hour apart (with a little jitter), `comments(i)` comments each."""
    for i in range(1, n + 1):
        forge.add_issue(
            i,
            created=START,
            updated=START + timedelta(hours=i, minutes=i % 7),
            comments=comments(i),
        )


def test_a_split_run_stores_every_item_once_for_a_few_extra_requests(fake, make_repo):
    fake.cursor_after = 300  # deep pages switch to cursors, inside the slices too
    forge, repo = make_repo("github", "pytorch", "pytorch")
    _spread(forge, 650, lambda i: i % 4)  # 975 comments
    run = run_inline(start_sync(repo, enqueue=False, parts=3))

    assert run.status == "done", run.errors
    assert sorted(
        Issue.objects.filter(repository=repo).values_list("number", flat=True), key=int
    ) == [str(i) for i in range(1, 651)]
    stored = sorted(
        Comment.objects.filter(issue__repository=repo).values_list("forge_id", flat=True)
    )
    assert stored == sorted(str(c.id) for i in forge.issues.values() for c in i.comments)
    assert (run.issues_seen, run.issues_new, run.comments_seen) == (650, 650, 975)
    # Three slices a listing, back to back: each ends where the next starts.
    for listing in ("issues", "comments"):
        parts = list(SyncPart.objects.filter(run=run, listing=listing).order_by("id"))
        assert len(parts) == 3 and all(p.status == "done" for p in parts)
        assert parts[0].window_start is None and parts[-1].window_end is None
        assert [p.window_end for p in parts[:-1]] == [p.window_start for p in parts[1:]]
    # 7 + 10 pages of data, a newest-item probe a listing, at most a page across each end.
    assert run.requests == fake.count() <= 7 + 10 + 2 + 2 * 2
    assert fake.count(status=422) == 0


def test_gitlab_parts_fetch_the_notes_of_their_own_issues(fake, make_repo):
    forge, repo = make_repo("gitlab", "group", "project")
    _spread(forge, 260, lambda i: 1 if i % 5 == 0 else 0)
    run = run_inline(start_sync(repo, enqueue=False, parts=2))

    assert run.status == "done", run.errors
    assert SyncPart.objects.filter(run=run).count() == 2
    assert Issue.objects.filter(repository=repo).count() == 260
    assert Comment.objects.filter(issue__repository=repo).count() == 52
    assert fake.count("/notes") == 52  # once each, whichever part stored the issue


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # as the worker tests
def test_two_tasks_of_one_part_store_its_page_once_and_only_one_goes_on(fake, make_repo):
    fake.delay = 0.2  # both fetch the page before either stores it
    forge, repo = make_repo("github", "NVIDIA", "Megatron-LM")
    _spread(forge, 250, lambda i: 1)
    run = start_sync(repo, enqueue=False)
    part = run.parts.get()
    results = []

    def task() -> None:
        try:
            results.append(step_part(part.pk, part.chain))
        finally:
            connection.close()  # the thread's own connection

    threads = [threading.Thread(target=task) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert sorted(r.more for r in results) == [False, True]
    run.refresh_from_db()
    assert run.pages == 1 and Issue.objects.filter(repository=repo).count() == 100
    # The token changed with the stored page: the loser's token is stale from now on.
    assert step_part(part.pk, part.chain).more is False
    live = next(r for r in results if r.more)
    run = run_inline(run)
    assert run.status == "done" and Issue.objects.filter(repository=repo).count() == 250
    assert live.chain != part.chain


def test_nul_characters_are_dropped_before_storing(fake, make_repo):
    forge, repo = make_repo("github", "NVIDIA", "Megatron-LM")
    forge.add_issue(1, "NUL\x00 in the title", body="binary\x00dump", comments=1)
    forge.issues["1"].comments[0].body = "log\x00line"
    forge.touch()  # edited behind the FakeRepo methods' back
    run = run_inline(start_sync(repo, enqueue=False))
    assert run.status == "done", run.errors
    issue = Issue.objects.get(repository=repo)
    assert (issue.title, issue.body, issue.raw["body"]) == (
        "NUL in the title",
        "binarydump",
        "binarydump",
    )
    assert issue.comments.get().body == "logline"


def test_the_fake_serves_a_listing_afresh_once_its_data_changed(fake, make_repo):
    forge, repo = make_repo("github", "NVIDIA", "Megatron-LM")
    forge.add_issue(1)
    url = f"{repo.api_url}/repos/NVIDIA/Megatron-LM/issues?state=all"
    first = requests.get(url, timeout=5)
    again = requests.get(url, timeout=5)
    assert first.content == again.content and first.headers["ETag"] == again.headers["ETag"]
    assert (
        int(again.headers["X-RateLimit-Remaining"])
        == int(first.headers["X-RateLimit-Remaining"]) - 1
    )
    forge.add_issue(2)
    fresh = requests.get(url, timeout=5)
    assert [i["number"] for i in fresh.json()] == [2, 1] and fresh.headers["ETag"] != first.headers[
        "ETag"
    ]
