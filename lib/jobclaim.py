"""Who is running a job (an export, a release, an upload, a rater run, a recall ranking), and
whether that process is gone. `lib.jobs.Job.claim` decides with it who owns a job delivered twice.

A Celery task is acknowledged after it ends (`task_acks_late`); a worker killed mid-task never
acknowledges it, so the broker hands the message to another worker (after the Redis
transport's `visibility_timeout`, docs/OPERATIONS.md "Faults"). That second delivery finds the
job `running` under the dead worker's name. It takes the job over when the worker that claimed
it is gone:

- a process on this host whose pid no longer exists (or this very process, when it is not
  running that job any more: `ACTIVE`), or
- a worker on another host not heard of (`heartbeat_at`) for `stale_after()`
  (`JOB_STALE_SECONDS`, default 120), since this host cannot ask it. A worker running a job
  writes its heartbeat every `JOB_HEARTBEAT_SECONDS` (default 15) from a thread of its own,
  whatever the work is doing (`lib.jobs.Heartbeat`), so a silence of a few heartbeats means
  the worker is gone, not busy.

A job may also name a process of this host that is alive but has not been heard of for
`alive_silent_after` (a rater run: past any silent fit, the pid is taken to be another
process's since). Otherwise the job is *busy*: another live process builds it, and the task
tries again later.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections import Counter
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

# "kind:id" of the jobs this process builds now, counted: two threads of one process may try
# to claim one job at once, and the one that lost must not unmark the one that won.
ACTIVE: Counter[str] = Counter()
_lock = threading.Lock()


class Busy(Exception):
    """Another live process builds this job: the task tries again later."""


def this_worker() -> str:
    """ "host:pid" of this process, as recorded on the job it claims."""
    return f"{socket.gethostname()}:{os.getpid()}"


def start(key: str) -> None:
    with _lock:
        ACTIVE[key] += 1


def stop(key: str) -> None:
    with _lock:
        ACTIVE[key] -= 1
        if ACTIVE[key] <= 0:
            del ACTIVE[key]


def running_here(key: str) -> bool:
    """Whether this very process is building job `key` now."""
    with _lock:
        return ACTIVE[key] > 0


def pid_alive(pid: int) -> bool:
    """Whether a process of this host with that pid exists (someone else's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def heartbeat_seconds() -> float:
    """How often a worker running a job writes its heartbeat (`JOB_HEARTBEAT_SECONDS`)."""
    return float(settings.JOB_HEARTBEAT_SECONDS)


def stale_after() -> timedelta:
    """How long a worker of another host may stay silent before it counts as gone
    (`JOB_STALE_SECONDS`: a few heartbeats; config/settings.py checks it is longer than two)."""
    return timedelta(seconds=settings.JOB_STALE_SECONDS)


def gone(
    key: str,
    worker: str,
    heartbeat_at: datetime | None,
    alive_silent_after: timedelta | None = None,
) -> bool:
    """Whether the process recorded as `worker` ("host:pid") no longer builds job `key`.

    `heartbeat_at`: when it was last heard of; a worker of another host may stay silent for
    `stale_after()`; `alive_silent_after`: how long a live process of this host may (None: for
    ever)."""
    host, _, pid = worker.rpartition(":")
    if host == socket.gethostname() and pid.isdigit():
        if int(pid) == os.getpid():
            return not running_here(key)
        if not pid_alive(int(pid)):
            return True
        if alive_silent_after is None:
            return False
        return heartbeat_at is None or heartbeat_at < timezone.now() - alive_silent_after
    # Another host (or no worker recorded: a build from before this rule): heard of lately?
    return heartbeat_at is None or heartbeat_at < timezone.now() - stale_after()


def step_pause() -> None:
    """Sleep `JOB_STEP_DELAY_MS` (0 but in the worker-kill tests, which need a job slow enough
    to kill in the middle: tests/faults/test_worker_kill.py). Called at each step."""
    delay = getattr(settings, "JOB_STEP_DELAY_MS", 0)
    if delay:
        time.sleep(delay / 1000)
