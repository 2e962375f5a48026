"""Benchmark: sync a fake GitHub repository of 20,000 issues and 60,000 comments.

Requests made, wall time and issues stored per second (end to end: the issues and their
comments), for the ingest's strategy (issue list plus the repository-wide comment stream)
beside a naive one-request-per-issue comment strategy. Targets: requests <= 1.05 *
(ceil(issues/100) + ceil(comments/100)); >= 1,000 issues stored/s.

Two ways to run the ingest's strategy:
  * one process (default): `run_inline`, one part per listing, this process storing the pages;
  * `--workers N`: N real `celery worker` processes (solo pool, on the Redis at `--redis`, a
    queue of this benchmark's own) share the run, split into `--parts` time slices a listing.

The fake forge is a real HTTP server in this process (threads), so in both ways it shares the
machine's cores with the client; every run prints how the CPU time split between the client
(this process's main thread, or the workers), the fake forge's threads and the PostgreSQL
backends (with workers: sampled every 50 ms, as each task's connection is closed after it),
and the load average before and after. The fake's page cache is emptied before each
run, so every page is serialized afresh.

    .venv/bin/python bench/ingest_sync.py [--issues 20000] [--comments-per-issue 3] [--runs 3]
        [--naive-runs 1] [--workers 2 --parts 4 --redis redis://127.0.0.1:6379/11]
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _django import ROOT, setup

# The fake forge listens on 127.0.0.1: listed as an admin would list it (ingest.hosts); the
# workers started below inherit it.
os.environ.setdefault("FORGE_API_HOSTS", "http://127.0.0.1")
setup()

from django.db import connection  # noqa: E402

from ingest.forges import client_for  # noqa: E402
from ingest.models import Issue, Repository, SyncRun  # noqa: E402
from ingest.runs import start_sync  # noqa: E402
from ingest.steps import run_inline, step_part  # noqa: E402
from ingest.storage import Tally, store_comments  # noqa: E402
from tests.fakeforge import FakeForge  # noqa: E402

OWNER = f"bench-{os.getpid()}"  # two benchmark processes never share rows
QUEUE = f"ingest-bench-{os.getpid()}"
TICKS = os.sysconf("SC_CLK_TCK")


def fresh_repository(fake: FakeForge) -> Repository:
    Repository.objects.filter(owner=OWNER).delete()
    return Repository.objects.create(
        forge="github", api_url=fake.api_url("github"), owner=OWNER, name="big", group="Bench"
    )


def proc_cpu(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def backends() -> dict[int, float]:
    """CPU seconds so far of every PostgreSQL backend connected to the benchmark database."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND backend_type = 'client backend'"
        )
        return {pid: proc_cpu(pid) for (pid,) in cursor.fetchall()}


class Meter:
    """Wall time, CPU split and load average of one run."""

    def __init__(self, fake: FakeForge, workers: list[subprocess.Popen]) -> None:
        self.fake, self.workers = fake, workers

    def __enter__(self) -> Meter:
        self.load = os.getloadavg()[0]
        self.fake_cpu = self.fake.cpu_seconds
        self.worker_cpu = {w.pid: proc_cpu(w.pid) for w in self.workers}
        self.db = backends()
        self.db_seen = dict(self.db)
        self.thread = time.thread_time()
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.started
        client = time.thread_time() - self.thread
        client += sum(proc_cpu(w.pid) - cpu for w, cpu in self._workers())
        self.sample()
        self.cpu = {
            "client": client,
            "fake": self.fake.cpu_seconds - self.fake_cpu,
            "postgres": sum(cpu - self.db.get(pid, 0.0) for pid, cpu in self.db_seen.items()),
        }
        self.load_after = os.getloadavg()[0]

    def sample(self) -> None:
        """Note the backends' CPU so far: Celery closes a worker's connection after each task,
        so a backend may be gone by the end (its last sample counts, a little short)."""
        for pid, cpu in backends().items():
            self.db_seen[pid] = max(cpu, self.db_seen.get(pid, 0.0))

    def _workers(self):
        return [(w, self.worker_cpu[w.pid]) for w in self.workers]

    def describe(self) -> str:
        split = ", ".join(f"{k} {v:.1f}" for k, v in self.cpu.items())
        return f"CPU s: {split}; load {self.load:.2f} -> {self.load_after:.2f}"


def ours(fake: FakeForge, workers: list[subprocess.Popen], parts: int) -> dict:
    repo = fresh_repository(fake)
    fake.reset_counts()
    fake.pages.clear()
    with Meter(fake, workers) as meter:
        if workers:
            run = start_sync(repo, parts=parts, queue=QUEUE)  # queued on commit (autocommit)
            while run.is_active:
                time.sleep(0.05)
                meter.sample()
                run.refresh_from_db()
        else:
            run = run_inline(start_sync(repo, enqueue=False))
    assert run.status == "done", run.errors
    # The comment listing's first part is made when the last issue part ends.
    comments_part = run.parts.filter(listing=SyncRun.Phase.COMMENTS).order_by("id").first()
    issue_phase = (comments_part.created_at - run.created_at).total_seconds()
    return {
        "requests": fake.count(),
        "wall": meter.wall,
        "issues": run.issues_new,
        "issue_phase": issue_phase,
        "meter": meter,
        "workers": run.worker_pages,
    }


def naive(fake: FakeForge, workers: list[subprocess.Popen], parts: int) -> dict:
    """The issue list, then one comment request per issue (what many collectors do)."""
    repo = fresh_repository(fake)
    fake.reset_counts()
    fake.pages.clear()
    with Meter(fake, []) as meter:
        run = start_sync(repo, enqueue=False)
        part = run.parts.get()
        chain = part.chain
        while chain:  # the issue listing only
            result = step_part(part.pk, chain)
            chain = result.chain if result.more else None
        run.refresh_from_db()
        client = client_for(repo)
        tally = Tally()
        for number in Issue.objects.filter(repository=repo).values_list("number", flat=True):
            for page in client.iter_pages(client.issue_comments_url(number)):
                store_comments(repo, client, page.items, tally, issue_number=number)
    return {"requests": fake.count(), "wall": meter.wall, "issues": run.issues_new, "meter": meter}


def start_workers(n: int, redis_url: str) -> list[subprocess.Popen]:
    from config.celery import app

    # This process queues the first task; the workers queue the rest on the same queue.
    app.conf.update(broker_url=redis_url, task_always_eager=False)
    s = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{s['USER']}@{s['HOST']}:{s['PORT'] or 5432}/{s['NAME']}",
        "REDIS_URL": redis_url,
        "DEBUG": "0",
    }
    workers = []
    for i in range(1, n + 1):
        command = [
            sys.executable, "-m", "celery", "-A", "config", "worker", "-P", "solo",
            "-Q", QUEUE, "-n", f"bench{i}-{os.getpid()}@%h", "--without-heartbeat",
            "--without-gossip", "--without-mingle", "-l", "warning",
        ]  # fmt: skip
        workers.append(subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True))
    time.sleep(5)  # let them import Django and connect
    return workers


def stop_workers(workers: list[subprocess.Popen]) -> None:
    for proc in workers:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in workers:
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issues", type=int, default=20_000)
    parser.add_argument("--comments-per-issue", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--naive-runs", type=int, default=1)
    parser.add_argument("--workers", type=int, default=0, help="Celery workers (0: in-process)")
    parser.add_argument("--parts", type=int, default=4, help="slices a listing (with --workers)")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/11")
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
    workers = start_workers(args.workers, args.redis) if args.workers else []
    mode = f"{args.workers} workers, {args.parts} parts a listing" if workers else "one process"
    try:
        for name, fn, runs in (("ours", ours, args.runs), ("naive", naive, args.naive_runs)):
            results = [fn(fake, workers if name == "ours" else [], args.parts) for _ in range(runs)]
            if not results:
                continue
            label = f"{name} ({mode})" if name == "ours" else name
            for r in results:
                phase = f", issue phase {r['issue_phase']:.1f} s" if r.get("issue_phase") else ""
                by = f"; pages by worker {r['workers']}" if workers and name == "ours" else ""
                rate = r["issues"] / r["wall"]
                print(f"  {label}: {r['requests']} requests, {r['wall']:.1f} s{phase}, "
                      f"{rate:.0f} issues/s; {r['meter'].describe()}{by}")  # fmt: skip
            wall = statistics.median(r["wall"] for r in results)
            print(
                f"{label}: median of {runs}: requests {results[0]['requests']}, wall {wall:.1f} s,"
                f" {args.issues / wall:.0f} issues stored/s (with their comments)"
            )
            if results[0].get("issue_phase"):
                phase = statistics.median(r["issue_phase"] for r in results)
                print(f"{label}: issue phase median {phase:.1f} s = {args.issues / phase:.0f}/s")
    finally:
        stop_workers(workers)
        fake.stop()
        Repository.objects.filter(owner=OWNER).delete()


if __name__ == "__main__":
    main()
