"""Backups that restore (#30): Olga, who runs the study's server, backs up an instance where
volunteers have labeled, a lead has resolved, an export was downloaded and release 1.0.0
frozen; she restores the backup into a new, empty PostgreSQL database and a fresh data
directory, as the drill in docs/OPERATIONS.md says. The restored instance exports the same
bytes as the original and holds the same release files; a backup someone changed, and a
database that is not empty, are refused before anything is written.

The expected bytes are the original instance's own export (made in this process from the
original database), never a figure copied from the code under test; the restored instance's
export is made in its own process (`manage.py shell`) from the restored database.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path

import psycopg
import pytest
import redis
from django.core.management import CommandError, call_command
from django.db import connection, connections

from config import backup as backups
from dataset.exports import build_zip, run_export_job
from dataset.models import ExportJob, Release
from dataset.releases import build_release, create_release, release_path
from labeling.models import ProjectIssue
from tests.builders import final_issue, label_item

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _url(name: str) -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{name}"


def _server():
    s = connection.settings_dict
    return psycopg.connect(
        host=s["HOST"] or "127.0.0.1",
        port=s["PORT"] or 5432,
        user=s["USER"],
        password=s["PASSWORD"] or None,
        dbname="postgres",
        autocommit=True,
    )


@pytest.fixture
def empty_database():
    """A new, uniquely named database on the shared server, dropped at the end."""
    name = f"annotator_restore_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with _server() as server:
        server.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with _server() as server:
            server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _manage(*args: str, env: dict[str, str], timeout: int = 180) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"{args}: {done.stdout[-2000:]}{done.stderr[-4000:]}"
    return done


def _members(data: bytes) -> dict[str, bytes]:
    """An export ZIP's files, its manifest without the moment it was written."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    manifest = json.loads(members.pop("manifest.json"))
    manifest.pop("exported_at")
    members["manifest.json"] = json.dumps(manifest, sort_keys=True).encode()
    return members


# The restored instance, in its own process: its exports (final issues; every issue with real
# names) and what it says of its release and export files.
RESTORED_SCRIPT = """
import json, os
from pathlib import Path
from annotator.models import Project
from dataset.exports import build_zip, export_path
from dataset.models import ExportJob, Release
from dataset.releases import release_path, verify_release
project = Project.objects.get(name=os.environ["BACKUP_TEST_PROJECT"])
out = Path(os.environ["BACKUP_TEST_OUT"])
build_zip(project, out / "finals.zip")
build_zip(project, out / "everything.zip", real_names=True, everything=True)
print(json.dumps({
    "releases": {r.version: [str(release_path(r)), r.sha256, verify_release(r)]
                 for r in Release.objects.filter(project=project)},
    "exports": {j.pk: [str(export_path(j)), j.sha256] for j in ExportJob.objects.all()},
}))
"""


@pytest.mark.django_db(transaction=True)
def test_a_restored_backup_exports_the_same_bytes(
    settings, tmp_path, project, issues_in_project, lead, annotator, empty_database
):
    original = tmp_path / "original"
    settings.EXPORT_ROOT = original / "exports"
    items = list(ProjectIssue.objects.filter(project=project).order_by("position"))
    final_issue(project, items[0], "C.3", "C.3")
    final_issue(project, items[1], "A.1", "A.1")
    final_issue(project, items[2], "A.1", "C.3", final="C.3")  # resolved by the lead
    final_issue(project, items[3], "FP", "FP")
    label_item(annotator, project, items[4], "B.2")  # in progress: one label of two
    job = run_export_job(
        ExportJob.objects.create(project=project, requested_by=lead, everything=True).pk
    )
    release = build_release(create_release(project, lead, "1.0.0").pk)
    assert job.status == "done" and release.status == "done", (job.error, release.error)
    # What a build in progress leaves: not part of a backup.
    (settings.EXPORT_ROOT / str(project.pk) / f"{job.filename}.part-4242").write_bytes(b"half")
    (settings.EXPORT_ROOT / str(project.pk) / ".build-9-4242").mkdir()

    shell = {k: v for k, v in os.environ.items() if k != "DATA_DIR"}
    source_env = {**shell, "DATABASE_URL": _url(connection.settings_dict["NAME"]),
                  "DATA_DIR": str(original)}  # fmt: skip
    made = _manage("backup", str(tmp_path / "backups"), env=source_env)
    backup = Path(made.stdout.strip())
    assert backup.parent == tmp_path / "backups" and backup.name.startswith("annotator-backup-")
    manifest = json.loads((backup / "manifest.json").read_text())
    listed = {e["path"] for e in manifest["files"]}
    assert listed == {
        "database.dump",
        f"files/exports/{job.file_path}",
        f"files/exports/{release.file_path}",
    }
    assert manifest["migrations"]["labeling"] and manifest["database"]["name"]

    restored = tmp_path / "restored"
    target_env = {**shell, "DATABASE_URL": _url(empty_database), "DATA_DIR": str(restored),
                  "CACHE_KEY_PREFIX": f"restore-{empty_database}"}  # fmt: skip
    # The restored site's cache keys go (rows of the database before); the broker's stay.
    assert settings.REDIS_URL, "bin/test sets REDIS_URL"
    store = redis.Redis.from_url(settings.REDIS_URL)
    stale, queued = f"restore-{empty_database}:1:cached-row", f"queue-{empty_database}"
    store.set(stale, b"row of the old database")
    store.set(queued, b"a task")
    done = _manage("restore", str(backup), env=target_env)
    assert f"into database {empty_database}" in done.stdout
    assert store.get(stale) is None and store.get(queued) == b"a task"
    store.delete(queued)

    out = tmp_path / "again"
    out.mkdir()
    shell_env = {**target_env, "BACKUP_TEST_PROJECT": project.name, "BACKUP_TEST_OUT": str(out)}
    said = json.loads(
        _manage("shell", "-c", RESTORED_SCRIPT, env=shell_env).stdout.strip().splitlines()[-1]
    )

    # The exports the restored instance writes are the original's, byte for byte.
    build_zip(project, tmp_path / "finals.zip")
    build_zip(project, tmp_path / "everything.zip", real_names=True, everything=True)
    for name in ("finals.zip", "everything.zip"):
        expected = _members((tmp_path / name).read_bytes())
        assert len(expected) > 5 and any(name.startswith("labels/") for name in expected)
        assert _members((out / name).read_bytes()) == expected, name

    # The release and the export job's files are back where the restored rows say, unchanged.
    release_file, release_sha, problems = said["releases"]["1.0.0"]
    assert Path(release_file) == restored / "exports" / release.file_path
    assert release_sha == release.sha256 == _sha(release_path(release)) == _sha(Path(release_file))
    assert problems == []
    assert not os.access(release_file, os.W_OK) or os.geteuid() == 0  # read-only, as built
    export_file, export_sha = said["exports"][str(job.pk)]
    assert _sha(Path(export_file)) == export_sha == job.sha256
    assert Release.objects.get(pk=release.pk).sha256 == release_sha

    # Restoring again over the restored instance (not empty now) with --force replaces it.
    again = _manage("restore", "--force", str(backup), env=target_env)
    assert f"into database {empty_database}" in again.stdout
    assert _sha(Path(release_file)) == release.sha256


@pytest.fixture
def data_dir(settings, tmp_path):
    settings.EXPORT_ROOT = tmp_path / "data" / "exports"
    (settings.EXPORT_ROOT / "1" / "releases").mkdir(parents=True)
    (settings.EXPORT_ROOT / "1" / "export-1-7.zip").write_bytes(b"PK export seven")
    (settings.EXPORT_ROOT / "1" / "releases" / "release-1-1.0.0.zip").write_bytes(b"PK 1.0.0")
    (settings.EXPORT_ROOT / "1" / "releases" / "release-1-1.1.0.zip.part-77").write_bytes(b"PK")
    return settings.EXPORT_ROOT


def _backup(tmp_path: Path) -> Path:
    out = io.StringIO()
    call_command("backup", str(tmp_path / "backups"), stdout=out, verbosity=0)
    return Path(out.getvalue().strip())


@pytest.mark.django_db
def test_the_manifest_lists_every_file_of_the_backup(tmp_path, data_dir):
    backup = _backup(tmp_path)
    manifest = json.loads((backup / "manifest.json").read_text())
    on_disk = {p.relative_to(backup).as_posix(): p for p in backup.rglob("*") if p.is_file()}
    assert set(on_disk) - {"manifest.json"} == {
        "database.dump",
        "files/exports/1/export-1-7.zip",
        "files/exports/1/releases/release-1-1.0.0.zip",
    }
    for entry in manifest["files"]:
        path = on_disk[entry["path"]]
        assert entry["bytes"] == path.stat().st_size
        assert entry["sha256"] == _sha(path)
    assert (backup / "files/exports/1/export-1-7.zip").read_bytes() == b"PK export seven"
    assert manifest["database"]["name"] == connection.settings_dict["NAME"]
    assert manifest["created_at"] and "git_commit" in manifest and manifest["app_version"]
    recorded = {(a, n) for a, names in manifest["migrations"].items() for n in names}
    with connection.cursor() as cursor:
        cursor.execute("SELECT app, name FROM django_migrations")
        assert recorded == set(cursor.fetchall())
    # Personal data: the app's user alone reads the backup and its dump.
    assert backup.stat().st_mode & 0o777 == 0o700
    assert (backup / "database.dump").stat().st_mode & 0o777 == 0o600
    # Nothing half-written is left beside it.
    assert [p.name for p in backup.parent.iterdir()] == [backup.name]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "victim", ["files/exports/1/releases/release-1-1.0.0.zip", "database.dump"]
)
def test_a_changed_backup_is_refused_naming_the_file(tmp_path, data_dir, victim):
    backup = _backup(tmp_path)
    call_command("restore", str(backup), "--verify-only", stdout=io.StringIO())  # the probe
    path = backup / victim
    os.chmod(path, 0o644)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit, same size
    path.write_bytes(bytes(data))
    with pytest.raises(CommandError, match=f"^{re.escape(victim)}: SHA-256 differs"):
        call_command("restore", str(backup), "--verify-only", stdout=io.StringIO())
    with pytest.raises(CommandError, match=f"^{re.escape(victim)}: SHA-256 differs"):
        call_command("restore", str(backup), "--force", stdout=io.StringIO(), verbosity=0)


@pytest.mark.django_db
def test_a_file_missing_or_added_is_refused(tmp_path, data_dir):
    backup = _backup(tmp_path)
    extra = backup / "files" / "exports" / "1" / "export-1-8.zip"
    extra.write_bytes(b"PK slipped in")
    with pytest.raises(CommandError, match=r"^files/exports/1/export-1-8\.zip: in the backup but"):
        call_command("restore", str(backup), "--verify-only", stdout=io.StringIO())
    extra.unlink()
    (backup / "files/exports/1/export-1-7.zip").unlink()
    with pytest.raises(CommandError, match=r"^files/exports/1/export-1-7\.zip: listed in"):
        call_command("restore", str(backup), "--verify-only", stdout=io.StringIO())


@pytest.mark.django_db
def test_restore_into_a_database_that_is_not_empty_is_refused(
    tmp_path, data_dir, settings, project
):
    backup = _backup(tmp_path)
    call_command("restore", str(backup), "--verify-only", stdout=io.StringIO())  # a good backup
    settings.EXPORT_ROOT = tmp_path / "elsewhere"
    name = connection.settings_dict["NAME"]
    with pytest.raises(CommandError, match=f"^database {name} is not empty"):
        call_command("restore", str(backup), stdout=io.StringIO(), verbosity=0)
    assert project.__class__.objects.filter(pk=project.pk).exists()
    assert not settings.EXPORT_ROOT.exists()  # no file was put back either


def test_a_backup_newer_than_the_code_is_named():
    applied = {"labeling": ["0001_initial", "0999_from_the_future"], "gone": ["0001_initial"]}
    # The probe: this code's own migrations are all known.
    assert backups.unknown_migrations({"labeling": ["0001_initial"]}) == []
    assert backups.unknown_migrations(applied) == ["labeling.0999_from_the_future"]


@pytest.mark.django_db
def test_a_backup_that_fails_half_way_leaves_nothing_that_looks_whole(
    tmp_path, data_dir, monkeypatch
):
    calls = []

    def broken_copy(source, target):
        calls.append(source)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(backups, "_copy", broken_copy)
    with pytest.raises(OSError, match="No space left"):
        call_command("backup", str(tmp_path / "backups"), stdout=io.StringIO(), verbosity=0)
    assert calls  # it failed while copying, after the dump
    assert list((tmp_path / "backups").iterdir()) == []
    assert backups.complete_backups(tmp_path / "backups") == []


@pytest.mark.django_db
def test_the_password_reaches_pg_dump_only_through_its_environment(tmp_path, data_dir, monkeypatch):
    # The test server trusts local connections, so a password in the settings is ignored by
    # it but still passed on: where it goes is what this test reads.
    monkeypatch.setitem(connection.settings_dict, "PASSWORD", "s3cret-pw-7f3c")
    seen = []
    real_run = backups._run

    def spy(command, env, what):
        seen.append((command, env))
        return real_run(command, env, what)

    monkeypatch.setattr(backups, "_run", spy)
    _backup(tmp_path)
    [(command, env)] = seen
    assert command[0].endswith("pg_dump") and "--format=custom" in command
    assert env["PGPASSWORD"] == "s3cret-pw-7f3c"  # the probe: the password is passed on
    assert not any("s3cret-pw-7f3c" in part for part in command)
    assert env["PGDATABASE"] == connection.settings_dict["NAME"]


@pytest.mark.django_db
def test_the_embedded_sqlite_set_up_is_told_what_to_do_instead(tmp_path, monkeypatch):
    monkeypatch.setattr(connections["default"], "vendor", "sqlite")
    with pytest.raises(CommandError, match=r"need PostgreSQL .* docs/OPERATIONS\.md"):
        call_command("backup", str(tmp_path / "backups"), stdout=io.StringIO(), verbosity=0)
    assert not (tmp_path / "backups").exists()
