"""celery beat that sends the periodic tasks from one process only, however many are started.

A deployment runs one beat (docker-compose.yml has one `beat` service). Two beats, say one
left running on an old host during an upgrade, would each send every periodic task: the
re-sync sweep twice, the outbox sweep twice. So the scheduler (CELERY_BEAT_SCHEDULER) first
holds a lock in Redis (`SET NX PX`, renewed by its owner on each tick, with BEAT_LOCK_SECONDS
of expiry): the beat holding it sends, any other waits and checks again every third of that
time. When the holder dies, its lock expires and another beat takes over within
BEAT_LOCK_SECONDS. If Redis is away, no beat sends (there is no broker to send to anyway).
"""

from __future__ import annotations

import logging
import os
import socket
from typing import Any

from celery.beat import PersistentScheduler
from django.conf import settings

log = logging.getLogger(__name__)

# KEYS[1] the lock; ARGV: owner, milliseconds. 1 when this owner holds it (now or already).
_HOLD = """
local held = redis.call('GET', KEYS[1])
if held == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if held then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""


class LockedScheduler(PersistentScheduler):
    """PersistentScheduler whose ticks send nothing unless this beat holds the Redis lock."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.lock_seconds = float(os.environ.get("BEAT_LOCK_SECONDS", "60"))
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        prefix = getattr(settings, "CACHE_KEY_PREFIX", "") or "annotator"
        self.lock_key = f"{prefix}:celery-beat-lock"
        self.leading = False
        super().__init__(*args, **kwargs)

    def _redis(self) -> Any:
        import redis

        if not hasattr(self, "_client"):
            self._client = redis.Redis.from_url(
                settings.REDIS_URL or "", socket_timeout=2, socket_connect_timeout=2
            )
        return self._client

    def _hold(self) -> bool:
        try:
            held = self._redis().eval(
                _HOLD, 1, self.lock_key, self.owner, int(self.lock_seconds * 1000)
            )
        except Exception as exc:  # Redis away: nobody sends, and there is no broker either
            log.warning("beat lock unavailable, sending nothing: %s", exc)
            held = 0
        if bool(held) != self.leading:
            self.leading = bool(held)
            log.warning(
                "beat %s %s the periodic tasks",
                self.owner,
                "sends" if self.leading else "stands by: another beat sends",
            )
        return self.leading

    def tick(self, *args: Any, **kwargs: Any) -> float:
        renew = self.lock_seconds / 3
        if not self._hold():
            return renew
        return min(super().tick(*args, **kwargs), renew)

    def close(self) -> None:
        if self.leading:
            try:
                release = (
                    "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end"
                )
                self._redis().eval(release, 1, self.lock_key, self.owner)
            except Exception as exc:
                log.warning("beat lock not released: %s", exc)
        super().close()
