"""Set up Django for a benchmark script on its own throwaway PostgreSQL database, and run a
benchmark's stages each in a fresh process (`migrated_database`, `setup_stage`, `run_stage`).

DATABASE_URL names a server and a base name; the benchmark uses `bench_<name>` (created and
migrated on first use, kept afterwards), so no real data is touched. Not `test_<name>`: that is
the database pytest-django creates and drops for a test run on the same DATABASE_URL, and
engineers run tests and benchmarks side by side.
"""

from __future__ import annotations

import json
import os
import subprocess
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

    connection.settings_dict["TEST"]["NAME"] = f"bench_{connection.settings_dict['NAME']}"
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=True)


def setup_stage(db: str, *, debug: bool = False, broker: str | None = None) -> None:
    """Set up Django in a benchmark's stage process on the PostgreSQL database `db` (made by
    `migrated_database`); with `broker`, that Redis URL unless REDIS_URL is set, else no broker
    (nothing is queued, the cache is local)."""
    os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{db}"
    os.environ.setdefault("SECRET_KEY", "bench")
    os.environ.setdefault("DEBUG", "1" if debug else "0")
    if broker:
        os.environ.setdefault("REDIS_URL", broker)
    else:
        os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def migrated_database(db: str, *, debug: bool = False, broker: bool = False) -> dict[str, str]:
    """Create (if missing) and migrate the PostgreSQL database `db` for a benchmark's stages;
    return the environment its child processes run with (without `broker`, no REDIS_URL:
    nothing is queued and the cache is local)."""
    subprocess.run(
        ["createdb", "-h", "127.0.0.1", "-U", "postgres", db], capture_output=True, check=False
    )
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{db}",
        "SECRET_KEY": "bench",
        "DEBUG": "1" if debug else "0",
    }
    if not broker:
        env.pop("REDIS_URL", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    return env


def run_stage(script: str, db: str, stage: str, env: dict[str, str], *extra: str) -> dict:
    """Run one stage of a benchmark in a fresh process (`script --db db --stage stage extra…`,
    so its peak memory is its own), print the JSON its last line gives and return it."""
    out = subprocess.run(
        [sys.executable, script, "--db", db, "--stage", stage, *extra],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    print(json.dumps(result), flush=True)
    return result


def backend_cpu() -> float:
    """CPU seconds used so far by this process's PostgreSQL backend (read from /proc: the
    server runs on this machine; parallel query workers are not counted)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
