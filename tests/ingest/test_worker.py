"""Real `celery worker` processes on real Redis: killed mid-sync, sharing one large run, and
waiting out a quota.

The worker runs in its own process against the test database, so these tests commit
(`transaction=True`) and restore the migrations' data afterwards (`serialized_rollback`).
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings

from config.celery import app
from ingest.models import Comment, Issue, SyncRun
from ingest.runs import resume_run, start_sync
from tests.faults.services import celery_worker, database_url, stop_process, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def start_worker() -> Iterator[Callable[..., subprocess.Popen]]:
    assert settings.REDIS_URL, "worker tests need Redis (bin/test sets REDIS_URL)"
    app.control.purge()  # tasks left in the queue by an earlier, interrupted run
    workers: list[subprocess.Popen] = []

    def start(name: str = "celery", env: dict[str, str] | None = None) -> subprocess.Popen:
        env = {
            **(env or {}),
            "DATABASE_URL": database_url(),
            "REDIS_URL": settings.REDIS_URL,
            "FORGE_API_HOSTS": "http://127.0.0.1",  # the fake forge, as an admin would list it
        }
        proc = celery_worker(env, hostname=f"{name}@%h")
        workers.append(proc)
        return proc

    yield start
    for proc in workers:
        stop_process(proc)


def _run(run_id: int) -> SyncRun:
    return SyncRun.objects.get(pk=run_id)


def test_worker_killed_mid_sync_resumes_without_holes_or_duplicates(fake, make_repo, start_worker):
    fake.delay = 0.05  # slow enough to kill the worker between two pages
    forge, repo = make_repo("github", "NVIDIA", "Megatron-LM")
    for n in range(1, 1501):
        created = f"2024-01-{1 + n // 1440:02d}T{n // 60 % 24:02d}:{n % 60:02d}:00Z"
        forge.add_issue(n, created=created, comments=1 + n % 2)
    worker = start_worker()
    run = start_sync(repo, parts=1)  # one chain: its pages can be counted exactly
    wait_for(lambda: _run(run.pk).pages >= 5, 60, "five committed pages")
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    killed = _run(run.pk)
    assert killed.is_active and 5 <= killed.pages < 38, killed.figures()
    stored_before = Issue.objects.filter(repository=repo).count()
    assert stored_before == min(1500, 100 * killed.pages)  # exactly the committed pages

    start_worker()
    resume_run(killed)
    wait_for(lambda: not _run(run.pk).is_active, 90, "the resumed run to finish")

    done = _run(run.pk)
    assert done.status == "done", done.errors
    numbers = list(Issue.objects.filter(repository=repo).values_list("number", flat=True))
    assert sorted(numbers, key=int) == [str(n) for n in range(1, 1501)]
    comments = Comment.objects.filter(issue__repository=repo)
    assert comments.count() == sum(len(i.comments) for i in forge.issues.values()) == 2250
    assert sorted(comments.values_list("forge_id", flat=True)) == sorted(
        str(c.id) for i in forge.issues.values() for c in i.comments
    )
    # At most the page in flight when the worker died was fetched twice.
    assert fake.count(status=200) <= 15 + 23 + 1


def test_a_killed_workers_sync_task_is_redelivered_to_another_and_the_run_finishes_once(
    fake, make_repo, start_worker, monkeypatch
):
    """No `resume_run`: the killed worker's unacknowledged message comes back from Redis after
    the visibility timeout (3 s here; docs/OPERATIONS.md "Faults") and a new worker goes on
    from the part's committed cursor."""
    monkeypatch.setenv("CELERY_VISIBILITY_TIMEOUT", "3")
    monkeypatch.setenv("CELERY_RESTORE_INTERVAL", "1")
    monkeypatch.setenv("INGEST_TAKEOVER_SECONDS", "2")
    fake.delay = 0.05
    forge, repo = make_repo("github", "NVIDIA", "apex")
    for n in range(1, 1001):
        forge.add_issue(n, created=f"2024-02-01T{n // 60 % 24:02d}:{n % 60:02d}:00Z", comments=1)
    worker = start_worker("first")
    run = start_sync(repo, parts=1)
    wait_for(lambda: _run(run.pk).pages >= 3, 60, "three committed pages")
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    assert _run(run.pk).is_active
    start_worker("second")
    wait_for(lambda: not _run(run.pk).is_active, 90, "the redelivered task to finish the run")

    done = _run(run.pk)
    assert done.status == "done", done.errors
    numbers = list(Issue.objects.filter(repository=repo).values_list("number", flat=True))
    assert sorted(numbers, key=int) == [str(n) for n in range(1, 1001)]
    comments = Comment.objects.filter(issue__repository=repo)
    assert comments.count() == comments.values("forge_id").distinct().count() == 1000
    assert done.issues_new == 1000, done.figures()


def test_two_workers_share_a_large_run_and_a_killed_ones_parts_resume(
    fake, make_repo, start_worker
):
    fake.delay = 0.02
    forge, repo = make_repo("github", "pytorch", "pytorch")
    start = datetime(2024, 1, 1, tzinfo=UTC)
    for n in range(1, 2401):
        forge.add_issue(
            n,
            created=start,
            updated=start + timedelta(hours=3 * n + n % 5),
            comments=n % 3,  # 2,400 comments
        )
    first = start_worker("first")
    start_worker("second")
    run = start_sync(repo, parts=4)

    def both_storing() -> bool:
        pages = _run(run.pk).worker_pages
        return len(pages) == 2 and min(pages.values()) >= 3

    wait_for(both_storing, 90, "both workers storing pages of the run")
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    killed = _run(run.pk)
    assert killed.is_active and killed.parts.count() >= 4, killed.figures()
    resume_run(killed)  # the dead worker's parts go on from their own committed cursors
    wait_for(lambda: not _run(run.pk).is_active, 120, "the run to finish")

    done = _run(run.pk)
    assert done.status == "done", done.errors
    numbers = list(Issue.objects.filter(repository=repo).values_list("number", flat=True))
    assert sorted(numbers, key=int) == [str(n) for n in range(1, 2401)]
    comments = Comment.objects.filter(issue__repository=repo)
    assert sorted(comments.values_list("forge_id", flat=True)) == sorted(
        str(c.id) for i in forge.issues.values() for c in i.comments
    )
    assert comments.count() == 2400
    assert done.issues_new == 2400 and done.issues_seen == 2400, done.figures()
    # Both workers stored pages; the issue listing and the comment listing were each split.
    host = next(iter(done.worker_pages)).split("@", 1)[1]
    assert set(done.worker_pages) == {f"first@{host}", f"second@{host}"}
    assert min(done.worker_pages.values()) >= 3
    listings = list(done.parts.values_list("listing", flat=True))
    assert listings.count("issues") == 4 and listings.count("comments") == 4
    # 24 + 24 pages, one newest-item probe per listing, at most one page across each of the
    # 3 + 3 slice ends, and at most one page per part in flight when the worker died.
    assert fake.count(status=200) <= 24 + 24 + 2 + 6 + 8


def test_exhausted_quota_reschedules_the_task_and_completes_after_the_reset(
    fake, make_repo, start_worker
):
    fake.set_quota("github", limit=3, window=4)
    forge, repo = make_repo("github", "NVIDIA", "Megatron-LM")
    for n in range(1, 301):
        forge.add_issue(n, created=f"2024-01-01T{n // 60:02d}:{n % 60:02d}:00Z", comments=1)
    other_forge, other = make_repo("gitee", "ascend", "MindSpeed")
    other_forge.add_issue("IBD6YU", comments=1)
    start_worker()

    run = start_sync(repo)
    wait_for(lambda: _run(run.pk).status == "waiting", 30, "the run to wait for the reset")
    waiting = _run(run.pk)
    assert waiting.quota_remaining == 0 and waiting.next_attempt_at is not None
    # The worker is not asleep: (its only slot) serves another repository meanwhile.
    second = start_sync(other)
    wait_for(lambda: _run(second.pk).status == "done", 20, "another run during the wait")
    assert _run(run.pk).status == "waiting"

    wait_for(lambda: _run(run.pk).status == "done", 60, "the run to finish after the reset")
    done = _run(run.pk)
    assert done.rate_limit_waits >= 1 and done.finished_at >= waiting.next_attempt_at
    assert Issue.objects.filter(repository=repo).count() == 300
    assert Comment.objects.filter(issue__repository=repo).count() == 300
