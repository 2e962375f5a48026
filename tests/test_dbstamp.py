"""`bin/test` keeps its test databases between runs and drops them only when what they are
built from changed (tests/dbstamp.py). Omar interrupts a run with Ctrl-C; his next run must
reuse the databases, not drop and rebuild every one saying that the migrations changed."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from tests import dbstamp

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def server_url():
    """A database URL on the test server whose test databases no run uses."""
    url = urlsplit(os.environ["DATABASE_URL"])
    name = f"annotator_stampcheck_{os.getpid()}"
    yield urlunsplit(url._replace(path="/" + name))
    dbstamp.drop_test_databases(urlunsplit(url._replace(path="/" + name)))


def _create(url: str, *names: str) -> None:
    admin = urlunsplit(urlsplit(url)._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        for name in names:
            conn.execute(f'CREATE DATABASE "{name}"')


def _existing(url: str) -> list[str]:
    name, template, workers = dbstamp.database_names(url)
    admin = urlunsplit(urlsplit(url)._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT datname FROM pg_database WHERE datname IN (%s, %s) OR datname LIKE %s"
            " ORDER BY datname",
            [name, template, workers],
        ).fetchall()
    return [row[0] for row in rows]


def test_an_interrupted_run_keeps_the_databases_and_only_a_changed_file_drops_them(
    tmp_path, server_url
):
    sources = tmp_path / "repo"
    (sources / "labeling" / "migrations").mkdir(parents=True)
    migration = sources / "labeling" / "migrations" / "0001_initial.py"
    migration.write_text("# the first migration\n")
    loader = sources / "loader.py"
    loader.write_text("# the loader\n")
    stamps = tmp_path / "stamps"
    name, template, _ = dbstamp.database_names(server_url)
    built = [name, template, f"{name}_gw0", f"{name}_gw1"]

    def prepare() -> str | None:
        return dbstamp.prepare(server_url, [migration, loader], sources, stamps)

    # A first run: no stamp, so whatever is there is dropped, and the stamp is written before
    # pytest starts.
    _create(server_url, name)
    reason = prepare()
    assert reason is not None and "no stamp" in reason
    assert _existing(server_url) == []
    assert dbstamp.stamp_path(server_url, stamps).exists()

    # pytest builds the databases, and Omar presses Ctrl-C: nothing more is written. The next
    # run finds the stamp and keeps them.
    _create(server_url, *built)
    assert prepare() is None
    assert _existing(server_url) == sorted(built)

    # A changed migration drops them, and the message names it.
    migration.write_text("# the first migration, edited\n")
    reason = prepare()
    assert reason == "changed labeling/migrations/0001_initial.py"
    assert _existing(server_url) == []
    assert prepare() is None

    # Another database URL has its own stamp: preparing it leaves this one's alone.
    other = server_url + "_other"
    assert dbstamp.prepare(other, [migration, loader], sources, stamps) is not None
    assert prepare() is None


def test_bin_test_stamps_before_pytest_and_not_after_it():
    """The probe of the bug: a stamp written only after pytest ended is lost by Ctrl-C."""
    script = (ROOT / "bin" / "test").read_text()
    stamp_at = script.index("-m tests.dbstamp")
    pytest_at = script.index(".venv/bin/pytest")
    assert stamp_at < pytest_at
    assert not re.search(r"touch\s+\"?\$db_stamp", script)


def test_the_real_sources_include_every_migration_and_the_study_taxonomy():
    names = {str(p.relative_to(ROOT)) for p in dbstamp.source_files()}
    assert "labeling/migrations/0001_initial.py" in names
    assert "taxonomy/loader.py" in names
    assert any(n.startswith("taxonomy/data/study/") for n in names)
