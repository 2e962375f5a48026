"""Runs are safe to repeat: re-runs, stale task chains, stalled runs and periodic re-syncs."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from ingest.models import Comment, Issue, SyncPart, SyncRun
from ingest.runs import resume_stalled, start_sync, sync_due_repositories
from ingest.steps import run_inline, step_part


def test_a_full_rerun_updates_in_place_and_never_duplicates(fake, make_repo):
    forge, repo = make_repo("github", "NVIDIA", "Megatron-LM")
    for n in range(1, 151):
        forge.add_issue(n, created=f"2024-01-01T00:{n // 60:02d}:{n % 60:02d}Z", comments=2)
    run_inline(start_sync(repo, enqueue=False))
    ids = dict(Issue.objects.filter(repository=repo).values_list("number", "id"))
    forge.edit_issue(3, at="2024-08-01T00:00:00Z", title="Edited")
    again = run_inline(start_sync(repo, full=True, enqueue=False))
    assert (again.issues_new, again.issues_updated) == (0, 1)
    assert dict(Issue.objects.filter(repository=repo).values_list("number", "id")) == ids
    assert Issue.objects.get(pk=ids["3"]).title == "Edited"  # same row: labels stay attached
    assert Comment.objects.filter(issue__repository=repo).count() == 300


def test_a_stale_task_chain_does_nothing(fake, make_repo):
    forge, repo = make_repo("github", "NVIDIA", "Megatron-LM")
    forge.add_issue(1)
    run = start_sync(repo, enqueue=False)
    part = run.parts.get()
    assert step_part(part.pk, "not-the-live-chain").more is False
    run.refresh_from_db()
    assert run.pages == 0 and fake.count() == 0 and run.status == "queued"


def test_stalled_runs_are_resumed_and_due_repositories_resynced(fake, make_repo):
    _, repo = make_repo("github", "NVIDIA", "Megatron-LM", sync_interval_hours=24)
    _, idle = make_repo("github", "NVIDIA", "Other", sync_interval_hours=0)
    run = start_sync(repo, enqueue=False)
    an_hour_ago = timezone.now() - timedelta(hours=1)
    SyncRun.objects.filter(pk=run.pk).update(status="running", heartbeat_at=an_hour_ago)
    SyncPart.objects.filter(run=run).update(
        status="running", heartbeat_at=an_hour_ago, created_at=an_hour_ago
    )
    chain = run.parts.get().chain
    assert resume_stalled() == [run.pk]
    # A new chain: the dead worker's task is ignored if redelivered.
    assert run.parts.get().chain != chain
    assert sync_due_repositories() == []  # a run is active
    SyncRun.objects.filter(pk=run.pk).update(status="done")
    started = sync_due_repositories()
    assert len(started) == 1 and SyncRun.objects.get(pk=started[0]).repository == repo
    assert not idle.sync_runs.exists()
