"""Set up Django for a benchmark script on its own throwaway PostgreSQL database.

DATABASE_URL names a server and a base name; the benchmark uses `test_<name>` (created and
migrated on first use, kept afterwards), like the test suite, so no real data is touched.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/annotator_bench")
    os.environ.setdefault("SECRET_KEY", "bench-only-not-secret")
    os.environ.setdefault("DEBUG", "0")  # DEBUG would keep every query in memory
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.pop("REDIS_URL", None)  # no broker: nothing is queued
    import django

    django.setup()
    from django.db import connection

    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=True)
