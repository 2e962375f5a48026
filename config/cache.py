"""Django's Redis cache backend, keeping one redis-py client per connection pool, and going on
without Redis.

Django makes a new `redis.Redis` for every cache call. Since redis-py 6 that constructor sets
up an event dispatcher and costs about 1 ms, more than the GET it is made for; sessions and
the labeling page's cached taxonomy made several per request. A redis-py client is safe to
share between threads (each command borrows a connection from the pool), so one per pool is
kept and reused.

Redis away (stopped, restarting, unreachable): the cache is only a cache, so a read is a miss
and a write is skipped, and the site goes on from the database (sessions are `cached_db`).
After a failure the process leaves Redis alone for OUTAGE_SECONDS rather than pay a connection
attempt on every call. A write or delete skipped in an outage may leave an older value in a
Redis that kept its data (a network cut, a restart with persistence): those keys are
remembered and deleted before this process reads from Redis again (beyond MAX_REMEMBERED
keys, every key of the cache's prefix is). docs/OPERATIONS.md, "Faults".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import Any, TypeVar

from django.core.cache.backends import redis as django_redis
from django.utils.functional import cached_property
from redis.client import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger(__name__)

T = TypeVar("T")
Key = str | bytes | memoryview  # as django-stubs types a cache key
Expiry = int | timedelta

UNREACHABLE = (RedisConnectionError, RedisTimeoutError)
OUTAGE_SECONDS = 2.0
MAX_REMEMBERED = 10_000


class RedisCacheClient(django_redis.RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Redis] = {}
        self.key_prefix = ""
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._outage = False
        self._stale: set[Key] = set()  # keys whose write or delete an outage skipped
        self._stale_all = False

    def get_client(self, key: Key | None = None, *, write: bool = False) -> Redis:
        # Django's private helpers, which django-stubs does not declare.
        base: Any = self
        index = base._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            client = self._clients[index] = base._client(
                connection_pool=base._get_connection_pool(write)
            )
        return client

    # Redis away -------------------------------------------------------------------------

    def _reachable(self) -> bool:
        """False during an outage's back-off; else True, once the skipped keys are gone."""
        if self._down_until and time.monotonic() < self._down_until:
            return False
        if not (self._stale or self._stale_all):
            return True
        with self._lock:
            keys, every = list(self._stale), self._stale_all
        try:
            client: Any = self.get_client(write=True)
            if every and self.key_prefix:
                for found in client.scan_iter(match=f"{self.key_prefix}:*", count=1000):
                    client.delete(found)
            elif keys:
                client.delete(*keys)
        except UNREACHABLE as exc:
            self._failed(exc, ())
            return False
        with self._lock:
            self._stale.difference_update(keys)
            self._stale_all = self._stale_all and not every
        log.warning("cache: Redis is back; %s key(s) written during the outage dropped", len(keys))
        return True

    def _failed(self, exc: BaseException, keys: Iterable[Key]) -> None:
        if not self._outage:
            self._outage = True
            log.warning("cache: Redis unreachable (%s); going on without it", exc)
        self._down_until = time.monotonic() + OUTAGE_SECONDS
        with self._lock:
            self._stale.update(keys)
            if len(self._stale) > MAX_REMEMBERED:
                self._stale.clear()
                self._stale_all = True

    def _write(self, keys: Iterable[Key], call: Callable[[], T], default: T) -> T:
        keys = list(keys)
        if not self._reachable():
            self._failed(ConnectionError("in the outage's back-off"), keys)
            return default
        try:
            result = call()
        except UNREACHABLE as exc:
            self._failed(exc, keys)
            return default
        self._outage = False
        return result

    def _read(self, call: Callable[[], T], default: T) -> T:
        if not self._reachable():
            return default
        try:
            result = call()
        except UNREACHABLE as exc:
            self._failed(exc, ())
            return default
        self._outage = False
        return result

    def get(self, key: Key, default: Any) -> Any:
        return self._read(lambda: super(RedisCacheClient, self).get(key, default), default)

    def get_many(self, keys: Iterable[Key]) -> dict[Key, Any]:
        return self._read(lambda: super(RedisCacheClient, self).get_many(keys), {})

    def has_key(self, key: Key) -> bool:
        return self._read(lambda: super(RedisCacheClient, self).has_key(key), False)

    def add(self, key: Key, value: Any, timeout: Expiry | None) -> bool:
        return self._write(
            [key], lambda: super(RedisCacheClient, self).add(key, value, timeout), False
        )

    def set(self, key: Key, value: Any, timeout: Expiry | None) -> None:
        return self._write(
            [key], lambda: super(RedisCacheClient, self).set(key, value, timeout), None
        )

    def touch(self, key: Key, timeout: Expiry) -> bool:
        return self._write([key], lambda: super(RedisCacheClient, self).touch(key, timeout), False)

    def delete(self, key: Key) -> bool:
        return self._write([key], lambda: super(RedisCacheClient, self).delete(key), False)

    def set_many(self, data: Mapping[Key, Any], timeout: Expiry) -> None:
        return self._write(
            data, lambda: super(RedisCacheClient, self).set_many(data, timeout), None
        )

    def delete_many(self, keys: Iterable[Key]) -> None:
        return self._write(keys, lambda: super(RedisCacheClient, self).delete_many(keys), None)


class RedisCache(django_redis.RedisCache):
    def __init__(self, server: str | list[str], params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = RedisCacheClient

    @cached_property
    def _cache(self) -> RedisCacheClient:
        base: Any = self  # Django's private attributes, which django-stubs does not declare
        client = self._class(base._servers, **base._options)
        client.key_prefix = self.key_prefix
        return client
