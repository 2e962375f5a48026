"""Whether a rater's run that says `running` is still being run by some process.

A run records who runs it (`RaterRun.worker`, "host:pid" of the process) and when it was last
heard of (`heartbeat_at`, written as labels arrive and at least every `HEARTBEAT_SECONDS` while
the backend waits for an answer). A run whose command was killed (or whose worker died) stays
`running` in the database; it is *stale*, and may be resumed, when

- its process is on this host and has ended (no such pid), or is this very process but no
  longer runs it (`ACTIVE`: the runs this process is running now), or
- nothing has been heard of it for `STALE_AFTER` (a process on another host, which this one
  cannot ask).

`raters.runs.run_rater` claims a run under a row lock through `stale` here, so two processes
never run one run at once (a Celery task delivered again beside a `machine_label --resume`).
"""

from __future__ import annotations

import os
import socket
import threading
from datetime import datetime, timedelta
from typing import Protocol

from django.utils import timezone


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

ACTIVE: set[int] = set()  # ids of the runs this process is running now
_lock = threading.Lock()


def this_worker() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def start(run_id: int) -> None:
    with _lock:
        ACTIVE.add(run_id)


def stop(run_id: int) -> None:
    with _lock:
        ACTIVE.discard(run_id)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def stale(run: Run) -> bool:
    """A `running` run that no process runs any more (see the module's docstring)."""
    if run.status != "running":
        return False
    host, _, pid = run.worker.rpartition(":")
    if host == socket.gethostname() and pid.isdigit():
        if int(pid) == os.getpid():
            with _lock:
                return run.pk not in ACTIVE
        if not _pid_alive(int(pid)):
            return True
        # Its process is alive here: a long silent stretch (a classifier fitting its folds
        # sends no heartbeat) is work, not death; only a silence long past any fit (or a pid
        # the system gave to another process since) makes it stale.
        heard = run.heartbeat_at or run.started_at or run.created_at
        return heard is None or timezone.now() - heard > ALIVE_STALE_AFTER
    heard = run.heartbeat_at or run.started_at or run.created_at
    return heard is None or timezone.now() - heard > STALE_AFTER
