"""Whether a rater's run that says `running` is still being run by some process.

A run records who runs it (`RaterRun.worker`, "host:pid" of the process) and when it was last
heard of (`heartbeat_at`, written as labels arrive and at least every `HEARTBEAT_SECONDS` while
the backend waits for an answer). A run whose command was killed (or whose worker died) stays
`running` in the database; it is *stale*, and may be resumed, when

- its process is on this host and has ended (no such pid), or is this very process but no
  longer runs it (`lib.jobclaim.running_here`: the jobs this process is running now), or
- nothing has been heard of it for `STALE_AFTER` (a process on another host, which this one
  cannot ask).

`raters.runs.run_rater` claims a run under a row lock through `stale` here, so two processes
never run one run at once (a Celery task delivered again beside a `machine_label --resume`).
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta
from typing import Protocol

from django.utils import timezone

from lib import jobclaim


class Run(Protocol):
    """What this module reads of a `raters.models.RaterRun` (which imports this module)."""

    pk: int
    status: str
    worker: str
    heartbeat_at: datetime | None
    started_at: datetime | None
    created_at: datetime


HEARTBEAT_SECONDS = 30
ALIVE_STALE_AFTER = timedelta(hours=6)
STALE_AFTER = timedelta(minutes=10)

# Who runs a run and whether that process lives: `lib.jobclaim`'s, for rater runs too.
this_worker = jobclaim.this_worker


def _key(run_id: int) -> str:
    return f"rater-run:{run_id}"


def start(run_id: int) -> None:
    jobclaim.start(_key(run_id))


def stop(run_id: int) -> None:
    jobclaim.stop(_key(run_id))


def stale(run: Run) -> bool:
    """A `running` run that no process runs any more (see the module's docstring)."""
    if run.status != "running":
        return False
    host, _, pid = run.worker.rpartition(":")
    if host == socket.gethostname() and pid.isdigit():
        if int(pid) == os.getpid():
            return not jobclaim.running_here(_key(run.pk))
        if not jobclaim.pid_alive(int(pid)):
            return True
        # Its process is alive here: a long silent stretch (a classifier fitting its folds
        # sends no heartbeat) is work, not death; only a silence long past any fit (or a pid
        # the system gave to another process since) makes it stale.
        heard = run.heartbeat_at or run.started_at or run.created_at
        return heard is None or timezone.now() - heard > ALIVE_STALE_AFTER
    heard = run.heartbeat_at or run.started_at or run.created_at
    return heard is None or timezone.now() - heard > STALE_AFTER
