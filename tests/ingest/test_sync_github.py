"""A lead syncs GitHub repositories: full, deep (cursor pagination) and incremental."""

from __future__ import annotations

import pytest

from ingest.models import Comment, Issue
from ingest.runs import start_sync
from ingest.steps import run_inline


def test_full_sync_stores_issues_and_comments_and_leaves_pull_requests_out(fake, make_repo):
    forge, repo = make_repo("github", "NVIDIA", "Megatron-LM", group="Megatron")
    forge.add_issue(1, "NCCL hang", body=None, user=None, comments=2)  # null body, deleted user
    forge.add_issue(2, "Loss spikes", user="ghost", labels=["bug"], created="2024-02-01T10:00:00Z")
    forge.add_issue(3, "Add FSDP2 support", comments=1, pull_request=True)
    forge.add_issue(4, "Docs", created="2025-03-01T00:00:00Z", comments=1)

    run = run_inline(start_sync(repo, enqueue=False))

    assert run.status == "done", run.errors
    assert sorted(Issue.objects.values_list("number", flat=True)) == ["1", "2", "4"]
    one = Issue.objects.get(number="1")
    assert (one.body, one.author, one.comments.count()) == ("", "", 2)
    assert Issue.objects.get(number="2").author == "ghost"
    assert Comment.objects.count() == 3  # the pull request's comment is not kept
    assert (run.issues_seen, run.issues_new, run.pull_requests_skipped) == (4, 3, 1)
    assert run.comments_skipped == 1
    # One page of issues, one page of the repository-wide comment stream: nothing per issue.
    assert fake.count("/issues/1/comments") == 0
    assert run.requests == fake.count() == 2
    assert run.quota_remaining == 4998


@pytest.mark.slow
def test_deep_repository_switches_to_cursor_pagination(fake, make_repo):
    fake.cursor_after = 300  # GitHub's cut-off is ~1,000 items; the same mechanics, smaller
    forge, repo = make_repo("github", "pytorch", "pytorch")
    for n in range(1, 651):
        forge.add_issue(n, created=f"2024-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}Z")
    forge.add_comment(650, "still broken", at="2024-05-01T00:00:00Z")

    run = run_inline(start_sync(repo, enqueue=False))

    assert run.status == "done", run.errors
    assert Issue.objects.filter(repository=repo).count() == 650
    assert sorted(int(n) for n in Issue.objects.values_list("number", flat=True)) == list(
        range(1, 651)
    )
    cursor_pages = [r for r in fake.requests if "after" in r.query]
    assert len(cursor_pages) == 4  # offsets 300, 400, 500, 600
    assert fake.count(status=422) == 0
    assert run.requests == 7 + 1
    # A client computing page=4 itself would have been refused:
    import requests

    deep = requests.get(f"{repo.api_url}/repos/pytorch/pytorch/issues?per_page=100&page=4")
    assert deep.status_code == 422 and "cursor based pagination" in deep.json()["message"]


def test_incremental_resync_fetches_only_what_changed(fake, make_repo):
    forge, repo = make_repo("github", "NVIDIA", "Megatron-LM")
    for n in range(1, 251):
        forge.add_issue(n, created=f"2024-01-01T{n // 60:02d}:{n % 60:02d}:00Z", comments=1)
    first = run_inline(start_sync(repo, enqueue=False))
    assert first.status == "done" and first.requests == 3 + 3
    repo.refresh_from_db()
    assert repo.synced_until is not None

    forge.edit_issue(7, at="2024-06-01T00:00:00Z", title="Edited on the forge")
    forge.add_comment(9, "new reply", at="2024-06-02T00:00:00Z")
    fake.reset_counts()
    second = run_inline(start_sync(repo, enqueue=False))

    assert second.status == "done", second.errors
    assert fake.count() == 2  # one page of changed issues, one of changed comments
    assert (second.issues_new, second.issues_updated) == (0, 2)
    assert Issue.objects.get(repository=repo, number="7").title == "Edited on the forge"
    assert Issue.objects.filter(repository=repo).count() == 250
    assert Comment.objects.filter(issue__repository=repo).count() == 251

    # Nothing changed since: once the window settles, its pages answer 304 (no quota).
    run_inline(start_sync(repo, enqueue=False))
    fake.reset_counts()
    before = fake.quota["github"].remaining
    fourth = run_inline(start_sync(repo, enqueue=False))
    assert fourth.status == "done"
    assert fake.count(status=304) == fake.count() == 2
    assert fourth.not_modified == 2 and fake.quota["github"].remaining == before
    assert (fourth.issues_seen, fourth.issues_new) == (0, 0)
