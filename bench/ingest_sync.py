"""Benchmark: sync a fake GitHub repository of 20,000 issues and 60,000 comments.

Requests made, wall time and issues stored per second, for the ingest's strategy (issue list
plus the repository-wide comment stream) beside a naive one-request-per-issue comment strategy.
Targets: requests <= 1.05 * (ceil(issues/100) + ceil(comments/100)); >= 1,000 issues stored/s.

    .venv/bin/python bench/ingest_sync.py [--issues 20000] [--comments-per-issue 3] [--runs 3]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time

from _django import setup

setup()

from ingest.forges import client_for  # noqa: E402
from ingest.models import Issue, Repository, SyncRun  # noqa: E402
from ingest.sync import run_inline, start_sync, store_comments  # noqa: E402
from tests.fakeforge import FakeForge  # noqa: E402

OWNER = f"bench-{os.getpid()}"  # two benchmark processes never share rows


def fresh_repository(fake: FakeForge) -> Repository:
    Repository.objects.filter(owner=OWNER).delete()
    return Repository.objects.create(
        forge="github", api_url=fake.api_url("github"), owner=OWNER, name="big", group="Bench"
    )


def ours(fake: FakeForge) -> dict:
    repo = fresh_repository(fake)
    fake.reset_counts()
    started = time.perf_counter()
    run = start_sync(repo, enqueue=False)
    issue_phase = None
    while run.is_active:
        run = run_inline(run, max_steps=1)
        if issue_phase is None and run.phase != SyncRun.Phase.ISSUES:
            issue_phase = time.perf_counter() - started
    wall = time.perf_counter() - started
    assert run.status == "done", run.errors
    return {
        "requests": fake.count(),
        "wall": wall,
        "issues": run.issues_new,
        "issue_phase": issue_phase,
    }


def naive(fake: FakeForge) -> dict:
    """The issue list, then one comment request per issue (what many collectors do)."""
    repo = fresh_repository(fake)
    fake.reset_counts()
    started = time.perf_counter()
    run = start_sync(repo, enqueue=False)
    while True:  # the issue phase only
        run = run_inline(run, max_steps=1)
        if run.phase != SyncRun.Phase.ISSUES or not run.is_active:
            break
    client = client_for(repo)
    for number in Issue.objects.filter(repository=repo).values_list("number", flat=True):
        for page in client.iter_pages(client.issue_comments_url(number)):
            store_comments(run, client, page.items, issue_number=number)
    wall = time.perf_counter() - started
    return {"requests": fake.count(), "wall": wall, "issues": run.issues_new}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issues", type=int, default=20_000)
    parser.add_argument("--comments-per-issue", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--naive-runs", type=int, default=1)
    args = parser.parse_args()
    fake = FakeForge().start()
    fake.set_quota("github", limit=10**9, window=3600)
    data = fake.repo("github", OWNER, "big")
    for n in range(1, args.issues + 1):
        data.add_issue(
            n,
            title=f"Issue {n}: NCCL timeout with FSDP on 8 GPUs",
            body="Traceback (most recent call last):\n  ...\nRuntimeError: NCCL error " * 5,
            created="2024-01-01T00:00:00Z",
            updated=f"2024-{1 + n % 12:02d}-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:00Z",
            comments=args.comments_per_issue,
        )
    comments = args.issues * args.comments_per_issue
    target = 1.05 * (math.ceil(args.issues / 100) + math.ceil(comments / 100))
    print(f"fake GitHub: {args.issues} issues, {comments} comments; request target <= {target:.0f}")
    for name, fn, runs in (("ours", ours, args.runs), ("naive", naive, args.naive_runs)):
        results = [fn(fake) for _ in range(runs)]
        if not results:
            continue
        for r in results:
            phase = f", issue phase {r['issue_phase']:.1f} s" if r.get("issue_phase") else ""
            print(f"  {name}: {r['requests']} requests, {r['wall']:.1f} s{phase}, "
                  f"{r['issues'] / r['wall']:.0f} issues/s")  # fmt: skip
        walls = [r["wall"] for r in results]
        wall = statistics.median(walls)
        print(
            f"{name}: median of {runs}: requests {results[0]['requests']}, wall {wall:.1f} s, "
            f"{args.issues / wall:.0f} issues stored/s (with their comments)"
        )
        if results[0].get("issue_phase"):
            phase = statistics.median(r["issue_phase"] for r in results)
            print(f"{name}: issue phase median {phase:.1f} s = {args.issues / phase:.0f} issues/s")
    fake.stop()
    Repository.objects.filter(owner=OWNER).delete()


if __name__ == "__main__":
    main()
