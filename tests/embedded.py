"""The embedded first-look setup (`bin/serve` without DATABASE_URL or REDIS_URL) for scripts
that tests run as a separate process, since the suite itself runs on PostgreSQL: Django on a
SQLite file in the given data directory, migrated, with the demo project."""

import os


def start(data_dir: str) -> None:
    """Set up Django on the embedded SQLite database in `data_dir`, migrate, load the demo."""
    for name in ("DATABASE_URL", "REDIS_URL"):
        os.environ.pop(name, None)
    os.environ.update(
        DATA_DIR=data_dir,
        DEBUG="0",
        ALLOWED_HOSTS="testserver",
        SECURE_SSL_REDIRECT="0",
        SESSION_COOKIE_SECURE="0",
        CSRF_COOKIE_SECURE="0",
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    import django

    django.setup()

    from django.core.management import call_command
    from django.db import connection

    assert connection.vendor == "sqlite", connection.vendor
    call_command("migrate", verbosity=0)
    call_command("load_demo", verbosity=0)


def prepared(data_dir, shared_dir) -> None:
    """Fill `data_dir` with a copy of a data directory that `start` migrated from nothing and
    loaded the demo into, made once per test run in `shared_dir` by a separate process.

    Migrating SQLite from nothing and loading the demo take about 15 s of CPU (a minute on a
    loaded host), and four slow tests need it (the first look, the issue list on SQLite,
    `bin/serve` twice): the first to come makes it (its failure, a migration that does not pass
    over SQLite, fails that test with the output), the others copy it. `shared_dir` is one every
    pytest-xdist worker of the run sees (`shared_tmp`); a file lock keeps them from making it
    twice. A script that calls `start` on the copy still migrates (nothing to do) and loads the
    demo (found).
    """
    import fcntl
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    template = Path(shared_dir) / "embedded-data"
    done = template / ".complete"
    with open(Path(shared_dir) / "embedded-data.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(template, ignore_errors=True)
            template.mkdir(parents=True)
            root = str(Path(__file__).resolve().parents[1])
            made = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "import sys; sys.path.insert(0, sys.argv[1]); "
                    "from tests.embedded import start; start(sys.argv[2])",
                    root,
                    str(template),
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-4000:]
            assert (template / "db.sqlite3").exists(), "start() made no SQLite database"
            done.touch()
    shutil.copytree(template, data_dir, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".*"))


def shared_tmp(tmp_path_factory):
    """A directory of this test run that every pytest-xdist worker sees (in one process, the
    run's own base directory: never one an earlier run left)."""
    import os

    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
