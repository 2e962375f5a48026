"""Django's Redis cache backend, keeping one redis-py client per connection pool.

Django makes a new `redis.Redis` for every cache call. Since redis-py 6 that constructor sets
up an event dispatcher and costs about 1 ms, more than the GET it is made for; sessions and
the labeling page's cached taxonomy made several per request. A redis-py client is safe to
share between threads (each command borrows a connection from the pool), so one per pool is
kept and reused.
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends import redis as django_redis


class RedisCacheClient(django_redis.RedisCacheClient):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, object] = {}

    def get_client(self, key=None, *, write=False):
        # Django's private helpers, which django-stubs does not declare.
        base: Any = self
        index = base._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            client = self._clients[index] = base._client(
                connection_pool=base._get_connection_pool(write)
            )
        return client


class RedisCache(django_redis.RedisCache):
    def __init__(self, server, params) -> None:
        super().__init__(server, params)
        self._class = RedisCacheClient
