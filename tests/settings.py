"""The test settings: the site's settings (`config.settings`) with what only a test run needs.

- A fast password hasher. PBKDF2's 1,000,000 iterations are the point in production and cost
  ~0.3 s per persona here; MD5 hashes first, the production hashers still verify (a user a
  subprocess made with `config.settings`). `tests/test_harness.py` checks both halves.
- Under pytest-xdist, each worker process its own Redis database and cache key prefix
  (pytest-django gives it its own PostgreSQL database, `test_<name>_gw<n>`): `cache.clear()`
  and the Celery worker tests flush and purge Redis, which must not reach another worker's
  tests. The worker's values are written back to the environment, so a subprocess a test starts
  (a Celery worker, `manage.py`) inherits them, and read back here only once.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

from django.conf import global_settings

REDIS_DATABASES = 16  # Redis's default `databases`


def worker_redis_url(url: str, worker: int) -> str:
    """The Redis URL of xdist worker `worker`: the base database, then the ones below it."""
    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{(base - worker) % REDIS_DATABASES}"))


_worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", … under pytest-xdist
if _worker.startswith("gw") and os.environ.get("TEST_WORKER_APPLIED") != _worker:
    os.environ["TEST_WORKER_APPLIED"] = _worker
    if os.environ.get("REDIS_URL"):
        os.environ["REDIS_URL"] = worker_redis_url(os.environ["REDIS_URL"], int(_worker[2:]))
    os.environ["CACHE_KEY_PREFIX"] = f"{os.environ.get('CACHE_KEY_PREFIX', 'test')}-{_worker}"

from config.settings import *  # noqa: E402, F403

# Content types and permissions are made again by post_migrate after every flush, with new ids;
# a serialized rollback (the worker tests) must not insert the old rows beside them, so they are
# left out of the snapshot, and `tests.harness.restore` makes them after a flush that did not.
TEST_NON_SERIALIZED_APPS = ["django.contrib.contenttypes", "django.contrib.auth"]

PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.MD5PasswordHasher",
    *global_settings.PASSWORD_HASHERS,
]

# The forge budget shared in Redis (ingest.budget) is off unless a test turns it on
# (tests/ingest/test_shared_budget.py starts its workers with FORGE_SHARED_BUDGET=1): the other
# ingest tests check how the client meets the forge's own refusals, which the budget forestalls.
FORGE_SHARED_BUDGET = os.environ.get("FORGE_SHARED_BUDGET") == "1"
