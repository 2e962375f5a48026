"""A newcomer's first look runs on SQLite with tasks in-process: labeling must work there too,
including the hand-written SQL of the labeling hot path (annotator/sql.py)."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests import embedded

SCRIPT = Path(__file__).with_name("first_look.py")


@pytest.mark.slow
def test_a_volunteer_labels_on_the_embedded_database(tmp_path, tmp_path_factory):
    # Migrated from nothing and with the demo once per run (tests.embedded.prepared).
    embedded.prepared(tmp_path, embedded.shared_tmp(tmp_path_factory))
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "3 issues labeled on SQLite" in done.stdout
    assert (tmp_path / "db.sqlite3").exists()
