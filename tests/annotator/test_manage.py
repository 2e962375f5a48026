"""The README's commands are `bin/manage …`: on the embedded set-up `bin/serve` made (no
DATABASE_URL, no SECRET_KEY, no DEBUG in Nadia's shell) they run against the same SQLite file
and key, where `python manage.py …` stops with "SECRET_KEY is not set"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from labeling.demo import DEMO_PROJECT
from tests import embedded

ROOT = Path(__file__).resolve().parents[2]
# What bin/serve and bin/test set, and a newcomer's fresh shell does not.
UNSET = ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "DATA_DIR")


@pytest.mark.slow
def test_bin_manage_runs_a_readme_command_on_the_embedded_data(tmp_path, tmp_path_factory):
    data = tmp_path / "data"
    embedded.prepared(data, embedded.shared_tmp(tmp_path_factory))
    elsewhere = tmp_path / "somewhere-else"
    elsewhere.mkdir()
    shell = {k: v for k, v in os.environ.items() if k not in UNSET}

    # The probe: the plain command fails as the newcomer saw it.
    plain = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "agreement", "--project", DEMO_PROJECT],
        env={**shell, "DATA_DIR": str(data)},
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert plain.returncode != 0 and "SECRET_KEY is not set" in plain.stderr

    done = subprocess.run(
        [str(ROOT / "bin" / "manage"), "agreement", "--project", DEMO_PROJECT, "--json"],
        env={**shell, "DATA_DIR": str(data)},
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    report = json.loads(done.stdout)  # stdout is the command's alone
    assert report, report
    # The development key is kept in that data directory, as bin/serve keeps it.
    assert (data / "secret_key").exists()
    assert not (elsewhere / "data").exists()


@pytest.mark.slow
def test_bin_manage_reads_the_database_of_a_relative_data_dir_from_the_root(tmp_path):
    """DATA_DIR=data (relative) means the repository's data/ for bin/manage as for bin/serve,
    wherever the command is typed; here a relative path to a fresh directory under the root."""
    name = f".test-manage-{os.getpid()}"
    target = ROOT / name
    shell = {k: v for k, v in os.environ.items() if k not in UNSET}
    try:
        done = subprocess.run(
            [
                str(ROOT / "bin" / "manage"),
                "shell",
                "-c",
                "from django.conf import settings; print(settings.DATABASES['default']['NAME'])",
            ],
            env={**shell, "DATA_DIR": name},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-4000:]
        assert done.stdout.strip().splitlines()[-1] == str(target / "db.sqlite3")
    finally:
        import shutil

        shutil.rmtree(target, ignore_errors=True)
