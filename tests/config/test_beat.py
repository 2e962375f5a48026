"""Two `celery beat` processes started by mistake (an old host left running during an upgrade)
send each periodic task once per period, not twice: the one holding the Redis lock sends
(config.beat). When that beat is killed, the other takes over within BEAT_LOCK_SECONDS.

No worker runs: the tasks sent stay in the broker's queue (a Redis database of the test's
own), where they are counted. The outbox sweep is every second here (OUTBOX_SWEEP_SECONDS).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from django.conf import settings

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SWEEP = "annotator.tasks.sweep_outbox"


@pytest.fixture
def broker() -> Iterator[str]:
    assert settings.REDIS_URL, "beat tests need Redis (bin/test sets REDIS_URL)"
    url = settings.REDIS_URL  # this test process's own database (tests/settings.py)
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()


def _sent(url: str) -> int:
    client = redis.Redis.from_url(url)
    messages = [json.loads(m) for m in client.lrange("celery", 0, -1)]
    return sum(1 for m in messages if m["headers"]["task"] == SWEEP)


def _beat(url: str, folder: str, n: int) -> tuple[subprocess.Popen, Path]:
    logfile = Path(folder) / f"beat{n}.log"
    env = {
        **os.environ,
        "REDIS_URL": url,
        "OUTBOX_SWEEP_SECONDS": "1",
        "BEAT_LOCK_SECONDS": "3",
        "CACHE_KEY_PREFIX": "beat-test",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "beat", "-l", "info",
         "--schedule", f"{folder}/schedule{n}", "--max-interval", "1"],
        cwd=ROOT, env=env, start_new_session=True,
        stdout=logfile.open("ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return proc, logfile


def _stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def test_two_beats_send_each_periodic_task_once_per_period(broker):
    with tempfile.TemporaryDirectory() as folder:
        beats = [_beat(broker, folder, n) for n in (0, 1)]
        try:
            _wait(lambda: _sent(broker) >= 1, 60, "the first periodic task")
            start, first = time.monotonic(), _sent(broker)
            time.sleep(6)
            elapsed, sent = time.monotonic() - start, _sent(broker) - first
            # One sweep a second, from one beat: two beats would send about twice as many.
            assert elapsed - 2 <= sent <= elapsed + 1, (sent, elapsed)
            senders = [
                (proc, log) for proc, log in beats if "sends the periodic tasks" in log.read_text()
            ]
            assert len(senders) == 1, [log.read_text()[-2000:] for _, log in beats]

            # The sending beat dies without a word: the other takes over within the lock's 3 s.
            _stop(senders[0][0], signal.SIGKILL)
            killed = _sent(broker)
            _wait(lambda: _sent(broker) >= killed + 3, 15, "the other beat to send")
            (other_log,) = [log for proc, log in beats if proc is not senders[0][0]]
            assert "sends the periodic tasks" in other_log.read_text()
        finally:
            for proc, _ in beats:
                _stop(proc)
