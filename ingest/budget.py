"""The forge rate limit as one budget shared by every worker, kept in Redis.

A forge counts requests per token (or per address) and window, whichever worker or host sends
them. Each worker reading only its own answers' `X-RateLimit-Remaining` would let four workers
each spend "the last 10" requests: 40 requests for 10. So every forge request first takes one
from a budget in Redis, keyed by forge, API origin and a hash of the token (never the token):

- the budget is what the forge itself stated: `remaining` and `reset` (epoch seconds) from its
  latest answer's rate-limit headers. A request takes one (`remaining - 1`, atomically, in a
  Lua script); an answer lowers `remaining` to what the forge says when that is less (it also
  counts what other clients of the same token sent) and never raises it within a window;
- when nothing is known (first request, or the window's reset has passed), exactly one request
  (the probe, a lock with a short expiry) goes out; the others wait a moment until its answer
  has opened the new window with the forge's own `remaining` and `reset`;
- a forge that sends no rate-limit headers is not metered (checked again each minute).

`take` answers 0 (send now) or the seconds to wait. A short wait (another worker's probe in
flight) is slept here; a long one (the budget is spent until the reset) becomes `RateLimited`
in the client, so the sync task comes back at the reset time instead of holding a worker.

With no REDIS_URL (the embedded set-up, one process) or FORGE_SHARED_BUDGET off there is no
shared budget, and the client follows the forge's headers alone, as before. If Redis fails
mid-way, the request goes out unmetered (logged): a sync needs the broker anyway.
"""

from __future__ import annotations

import hashlib
import logging
import time
from functools import cache
from typing import Any

from django.conf import settings

log = logging.getLogger(__name__)

PROBE_SECONDS = 10  # a probe whose answer never came (worker killed) frees the window after this
UNMETERED_SECONDS = 60  # how long a forge without rate-limit headers is taken as unmetered
MARGIN_SECONDS = 1  # after the stated reset, for clocks and the header's rounding

# KEYS[1] the budget hash, KEYS[2] the probe lock, KEYS[3] requests in flight;
# ARGV: now, probe seconds, owner. Returns 0 (go: one request taken), or milliseconds to wait.
_TAKE = """
local now = tonumber(ARGV[1])
local state = redis.call('HMGET', KEYS[1], 'remaining', 'reset')
local remaining, reset = tonumber(state[1]), tonumber(state[2])
local go = false
if reset ~= nil and remaining ~= nil and now < reset then
  if remaining < 0 then return 0 end
  if remaining == 0 then return math.max(1, math.ceil((reset - now) * 1000)) end
  redis.call('HINCRBY', KEYS[1], 'remaining', -1)
  go = true
elseif redis.call('SET', KEYS[2], ARGV[3], 'NX', 'EX', tonumber(ARGV[2])) then
  go = true
end
if not go then return 200 end
redis.call('INCR', KEYS[3])
redis.call('EXPIRE', KEYS[3], 120)
return 0
"""

# KEYS as above; ARGV: remaining, reset (epoch seconds, margin added), now, owner, unmetered
# seconds; remaining -1: the answer had no rate-limit headers.
_RECORD = """
local stated, reset, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if redis.call('GET', KEYS[2]) == ARGV[4] then redis.call('DEL', KEYS[2]) end
local others = tonumber(redis.call('DECR', KEYS[3]))
if others < 0 then redis.call('SET', KEYS[3], 0, 'EX', 120); others = 0 end
if stated < 0 then
  if redis.call('EXISTS', KEYS[1]) == 0 then
    redis.call('HSET', KEYS[1], 'remaining', -1, 'reset', now + tonumber(ARGV[5]))
    redis.call('EXPIRE', KEYS[1], tonumber(ARGV[5]) + 60)
  end
  return -1
end
-- Requests still in flight may not be in the forge's count yet: take them off too.
stated = math.max(0, stated - others)
local known = tonumber(redis.call('HGET', KEYS[1], 'reset'))
local remaining = tonumber(redis.call('HGET', KEYS[1], 'remaining'))
if known ~= nil and reset < known - 0.5 then return remaining end  -- an earlier window's answer
if known == nil or reset > known + 0.5 or remaining == nil or remaining < 0
   or stated < remaining then
  remaining = stated
end
redis.call('HSET', KEYS[1], 'remaining', remaining, 'reset', reset)
redis.call('EXPIREAT', KEYS[1], math.ceil(reset) + 3600)
return remaining
"""

# KEYS: the probe lock, requests in flight; ARGV: owner. A request that got no answer.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
if tonumber(redis.call('DECR', KEYS[2])) < 0 then redis.call('SET', KEYS[2], 0, 'EX', 120) end
return 0
"""


@cache
def _client(url: str) -> Any:
    import redis

    return redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)


def enabled() -> bool:
    return bool(settings.REDIS_URL) and bool(getattr(settings, "FORGE_SHARED_BUDGET", True))


class Budget:
    """The shared budget of one forge origin and token."""

    def __init__(self, forge: str, origin: str, token: str) -> None:
        who = hashlib.sha256(token.encode()).hexdigest()[:16] if token else "anonymous"
        prefix = getattr(settings, "CACHE_KEY_PREFIX", "") or "annotator"
        self.key = f"{prefix}:forge-budget:{forge}:{origin}:{who}"
        self.keys = (self.key, f"{self.key}:probe", f"{self.key}:inflight")
        self.owner = f"{id(self)}-{time.monotonic_ns()}"
        self.redis = _client(settings.REDIS_URL)

    def take(self) -> float:
        """0 when a request may go now (one is taken: `answered` must follow), else the
        seconds to wait."""
        try:
            wait = self.redis.eval(_TAKE, 3, *self.keys, time.time(), PROBE_SECONDS, self.owner)
        except Exception as exc:  # Redis away: the forge's own headers still rule
            log.warning("forge budget unavailable, request sent unmetered: %s", exc)
            return 0.0
        return int(wait) / 1000

    def answered(self, remaining: int | None, reset: float | None, headers: bool) -> None:
        """After a request taken with `take`: what the forge stated (`headers` False: it
        answered without rate-limit headers; None, None with headers True: no answer)."""
        try:
            if headers and (remaining is None or reset is None):
                self.redis.eval(_RELEASE, 2, self.keys[1], self.keys[2], self.owner)
                return
            self.redis.eval(
                _RECORD, 3, *self.keys,
                remaining if headers else -1, (reset or 0) + MARGIN_SECONDS,
                time.time(), self.owner, UNMETERED_SECONDS,
            )  # fmt: skip
        except Exception as exc:
            log.warning("forge budget not updated: %s", exc)
