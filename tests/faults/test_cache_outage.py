"""The cache with Redis away (config.cache): reads miss, writes are skipped, nobody waits; a
value an outage left stale in a Redis that kept its data is never read again."""

from __future__ import annotations

import socket
import time

import pytest
from django.conf import settings
from redis.exceptions import ConnectionError as RedisConnectionError

from config import cache as guarded
from config.cache import RedisCache


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket is closed


def _cache(location: str) -> RedisCache:
    return RedisCache(location, {"KEY_PREFIX": f"outage-{time.time_ns()}", "OPTIONS": {}})


def test_with_no_redis_a_read_misses_and_a_write_is_skipped_quickly():
    cache = _cache(f"redis://127.0.0.1:{_closed_port()}/0")
    started = time.monotonic()
    for n in range(200):
        cache.set(f"k{n}", n)
        assert cache.get(f"k{n}", "default") == "default"
    assert cache.get_many(["a", "b"]) == {}
    assert cache.add("a", 1) is False and cache.delete("a") is False
    assert time.monotonic() - started < 2  # one refused connection, then the back-off


def test_a_delete_an_outage_skipped_is_done_before_redis_is_read_again(monkeypatch):
    assert settings.REDIS_URL
    cache = _cache(settings.REDIS_URL)
    cache.set("session", "logged in")
    client = cache._cache
    real = client.get_client

    def unreachable(*args, **kwargs):
        raise RedisConnectionError("Connection refused")

    monkeypatch.setattr(client, "get_client", unreachable)
    assert cache.delete("session") is False  # a logout during the outage: skipped
    monkeypatch.setattr(client, "get_client", real)
    assert real(write=True).exists(cache.make_and_validate_key("session")) == 1  # still stale
    monkeypatch.setattr(guarded, "OUTAGE_SECONDS", 0.0)
    client._down_until = 0.0
    assert cache.get("session") is None  # the skipped delete went first
    cache.set("session", "again")
    assert cache.get("session") == "again"


@pytest.mark.parametrize("n", [guarded.MAX_REMEMBERED + 1])
def test_past_the_limit_every_key_of_the_prefix_goes(monkeypatch, n):
    cache = _cache(settings.REDIS_URL)
    other = _cache(settings.REDIS_URL)
    cache.set("kept before", 1)
    other.set("another site's", 2)
    client = cache._cache
    real = client.get_client
    monkeypatch.setattr(
        client, "get_client", lambda *a, **k: (_ for _ in ()).throw(RedisConnectionError())
    )
    cache.delete_many([f"k{i}" for i in range(n)])
    monkeypatch.setattr(client, "get_client", real)
    client._down_until = 0.0
    assert cache.get("kept before") is None
    assert other.get("another site's") == 2  # another prefix is left alone
