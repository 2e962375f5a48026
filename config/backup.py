"""Backups that restore: a PostgreSQL dump and the data directory's files, with a manifest.

`create_backup(destination)` writes one directory, `annotator-backup-<UTC time>/`:

- `database.dump`: `pg_dump --format=custom`, one consistent snapshot of the whole database
  (pg_dump reads it in one REPEATABLE READ transaction, so labels submitted meanwhile are either
  in it whole or not at all);
- `files/exports/…`: a copy of `EXPORT_ROOT` (`DATA_DIR/exports`): the export ZIPs
  (`<project>/export-…zip`) and the releases (`<project>/releases/release-…zip`), without the
  temporaries of a build in progress (`.part-…`, `.build-…`);
- `manifest.json`: when, which code (version, git commit), the database (name, server and
  pg_dump versions), the migrations applied per app, and every other file with its size and
  SHA-256.

The dump comes first and the files after it: a release or export is marked done in the
database only after its file is in place, so every file the dump names is copied (a file
finished in between is copied too, and is harmless). The directory is written under a hidden
temporary name (`.annotator-backup-…partial-<pid>`), every file fsynced, the manifest last, and
renamed to its final name only when complete: a directory named `annotator-backup-…` with a
`manifest.json` is a whole backup, never a half-written one.

`restore_backup(path)` checks every file against the manifest first (a missing, extra or
changed file is refused, named), refuses code older than the backup (a migration it does not
know), refuses a database that is not empty unless `force`, runs `pg_restore --no-owner
--no-privileges --exit-on-error --single-transaction` into the configured database (a failure
leaves it empty), puts the files back under `EXPORT_ROOT`, drops this site's cache keys, and
says which migrations the code still has to apply.

The database's password never reaches a command line: `pg_dump` and `pg_restore` get the
connection from `PG*` variables in their own environment. The embedded SQLite set-up is not
backed up here (docs/OPERATIONS.md says how to copy it). `manage.py backup` and
`manage.py restore` are thin wrappers; docs/OPERATIONS.md is the procedure around them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings
from django.db import connection, connections
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder

FORMAT = "issue-annotator-backup"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
DUMP = "database.dump"
FILES = "files"
EXPORTS = "exports"  # files/exports/… is EXPORT_ROOT/…
PREFIX = "annotator-backup-"
# Name patterns of what a build in progress leaves beside its final file (dataset.exports,
# dataset.releases): never part of a backup.
_TEMPORARY = re.compile(r"\.part-\d+$")
_BLOCK = 1 << 20

Report = Callable[[str], None]


class BackupError(Exception):
    """A backup or restore refused or failed; the message names the file, database or step."""


def _quiet(_: str) -> None:
    pass


# --- the database's connection, for pg_dump and pg_restore --------------------------------


def _database(alias: str = "default") -> dict[str, Any]:
    db = connections[alias].settings_dict
    if connections[alias].vendor != "postgresql":
        raise BackupError(
            "backup and restore need PostgreSQL (DATABASE_URL); the embedded SQLite set-up is "
            "copied with the app stopped, see docs/OPERATIONS.md"
        )
    return db


def pg_environment(db: dict[str, Any]) -> dict[str, str]:
    """The child's environment: the connection in `PG*` variables, the password among them,
    so it never appears in a process list or a log of the command line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    values = {
        "PGHOST": db.get("HOST") or "",
        "PGPORT": str(db.get("PORT") or ""),
        "PGUSER": db.get("USER") or "",
        "PGPASSWORD": db.get("PASSWORD") or "",
        "PGDATABASE": db.get("NAME") or "",
    }
    options = db.get("OPTIONS") or {}
    for option, variable in (("sslmode", "PGSSLMODE"), ("sslrootcert", "PGSSLROOTCERT")):
        if options.get(option):
            values[variable] = str(options[option])
    env.update({k: v for k, v in values.items() if v})
    return env


def _server_major(alias: str = "default") -> tuple[int, str]:
    with connections[alias].cursor() as cursor:
        cursor.execute("SHOW server_version_num")
        number = int(cursor.fetchone()[0])
        cursor.execute("SHOW server_version")
        text = cursor.fetchone()[0]
    return number // 10000, text


def _tool_major(path: str) -> tuple[int, str]:
    # The tool found by find_tool (a path, no shell); nothing of a user's on the line.
    try:
        out = subprocess.run(  # noqa: S603
            [path, "--version"], capture_output=True, text=True, check=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise BackupError(f"{path} --version failed: {exc}") from None
    found = re.search(r"(\d+)(?:\.(\d+))?", out)
    if not found:
        raise BackupError(f"{path} --version said {out.strip()!r}; no version in it")
    return int(found.group(1)), out.strip()


def find_tool(name: str, server_major: int, bin_dir: str | None = None) -> tuple[str, str]:
    """`pg_dump` or `pg_restore` of the server's major version or newer: `bin_dir` if given,
    else Debian's `/usr/lib/postgresql/<major>/bin`, else the one on PATH. An older one is
    refused (it cannot read a newer server)."""
    candidates = []
    if bin_dir:
        candidates.append(str(Path(bin_dir) / name))
    else:
        candidates.append(f"/usr/lib/postgresql/{server_major}/bin/{name}")
        on_path = shutil.which(name)
        if on_path:
            candidates.append(on_path)
    for candidate in candidates:
        if Path(candidate).is_file() and os.access(candidate, os.X_OK):
            major, version = _tool_major(candidate)
            if major >= server_major:
                return candidate, version
            raise BackupError(
                f"{candidate} is version {major}, older than the server ({server_major}): "
                f"install the PostgreSQL {server_major} client tools or pass --pg-bin"
            )
    raise BackupError(
        f"{name} not found (looked in {', '.join(candidates)}): install the PostgreSQL "
        f"{server_major} client tools or pass --pg-bin"
    )


def _run(command: list[str], env: dict[str, str], what: str) -> None:
    # pg_dump / pg_restore by path, with flags and paths of ours; no shell.
    done = subprocess.run(command, env=env, capture_output=True, text=True)  # noqa: S603
    if done.returncode != 0:
        # pg_dump's and pg_restore's messages name objects, never the password (not on argv).
        detail = (done.stderr or done.stdout).strip()[-2000:]
        raise BackupError(f"{what} failed (exit {done.returncode}): {detail}")


# --- code and migrations --------------------------------------------------------------------


def applied_migrations(alias: str = "default") -> dict[str, list[str]]:
    """The migrations recorded as applied in the database, per app, sorted."""
    recorder = MigrationRecorder(connections[alias])
    if not recorder.has_table():
        return {}
    per_app: dict[str, list[str]] = {}
    for app, name in recorder.applied_migrations():
        per_app.setdefault(app, []).append(name)
    return {app: sorted(names) for app, names in sorted(per_app.items())}


def unknown_migrations(applied: dict[str, list[str]]) -> list[str]:
    """Applied migrations this code does not have (`app.name`): the database is newer than the
    code. Apps with no migrations in this code are left out (an app since removed)."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    known = set(loader.disk_migrations)
    for migration in loader.disk_migrations.values():
        known.update((app, name) for app, name in migration.replaces)
    apps_with_migrations = {app for app, _ in known}
    return [
        f"{app}.{name}"
        for app, names in sorted(applied.items())
        if app in apps_with_migrations
        for name in names
        if (app, name) not in known
    ]


def pending_migrations(alias: str = "default") -> list[str]:
    """Migrations of this code not applied in the database (what `migrate` would run)."""
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connections[alias])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{m.app_label}.{m.name}" for m, backwards in plan if not backwards]


def _code_version() -> dict[str, str | None]:
    from importlib import metadata

    try:
        version: str | None = metadata.version("issue-annotator")
    except metadata.PackageNotFoundError:
        version = None
    commit = None
    git = shutil.which("git")
    if git is None or not (Path(settings.BASE_DIR) / ".git").exists():
        return {"app_version": version, "git_commit": None}
    try:
        done = subprocess.run(  # noqa: S603
            [git, "rev-parse", "HEAD"],
            cwd=settings.BASE_DIR,
            capture_output=True,
            text=True,
            timeout=10,
        )
        if done.returncode == 0:
            commit = done.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        pass
    return {"app_version": version, "git_commit": commit}


# --- files ----------------------------------------------------------------------------------


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def _copy(source: Path, target: Path) -> str:
    """Copy, fsync and return the SHA-256 of what was written."""
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with open(source, "rb") as src, open(target, "xb") as dst:
        for block in iter(lambda: src.read(_BLOCK), b""):
            digest.update(block)
            dst.write(block)
        dst.flush()
        os.fsync(dst.fileno())
    return digest.hexdigest()


def data_files(root: Path) -> list[Path]:
    """The files under `root` a backup keeps: not a build's temporaries (hidden names,
    `.part-<pid>`), in a stable order."""
    if not root.is_dir():
        return []
    found = []
    for path in root.rglob("*"):
        relative = path.relative_to(root)
        if any(part.startswith(".") for part in relative.parts) or _TEMPORARY.search(path.name):
            continue
        if path.is_file() and not path.is_symlink():
            found.append(path)
    return sorted(found)


def _entry(backup: Path, path: Path, sha256: str) -> dict[str, Any]:
    stat = path.stat()
    return {
        "path": path.relative_to(backup).as_posix(),
        "bytes": stat.st_size,
        "sha256": sha256,
        "mode": stat.st_mode & 0o777,
    }


# --- backup ---------------------------------------------------------------------------------


def create_backup(destination: Path, pg_bin: str | None = None, report: Report = _quiet) -> Path:
    """Write a complete backup directory under `destination` and return its path."""
    db = _database()
    destination = Path(destination).resolve()
    destination.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    name = f"{PREFIX}{now:%Y%m%dT%H%M%S}Z"
    final = destination / name
    if final.exists():
        raise BackupError(f"{final} already exists; a backup is never overwritten")
    work = destination / f".{name}.partial-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    # Personal data (accounts, who labeled what): readable by the app's user only.
    work.mkdir(mode=0o700)
    try:
        major, server_version = _server_major()
        pg_dump, pg_dump_version = find_tool("pg_dump", major, pg_bin)
        before = applied_migrations()
        report(f"dumping database {db['NAME']} ({pg_dump_version})")
        dump = work / DUMP
        # The connection comes from PG* in the child's environment; nothing secret on argv.
        _run(
            [pg_dump, "--format=custom", "--no-password", f"--file={dump}"],
            pg_environment(db),
            "pg_dump",
        )
        if applied_migrations() != before:
            raise BackupError("migrations were applied during the backup; run it again")
        os.chmod(dump, 0o600)
        with open(dump, "rb") as fh:
            os.fsync(fh.fileno())
        files = [_entry(work, dump, sha256_of(dump))]

        export_root = Path(settings.EXPORT_ROOT)
        sources = data_files(export_root)
        report(f"copying {len(sources)} file(s) of {export_root}")
        for source in sources:
            target = work / FILES / EXPORTS / source.relative_to(export_root)
            digest = _copy(source, target)
            os.chmod(target, source.stat().st_mode & 0o777)
            files.append(_entry(work, target, digest))
        for directory in sorted({p.parent for p in work.rglob("*") if p.is_file()}):
            _fsync_dir(directory)

        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "created_at": now.isoformat(),
            **_code_version(),
            "database": {
                "engine": "postgresql",
                "name": db["NAME"],
                "server_version": server_version,
                "pg_dump_version": pg_dump_version,
            },
            "migrations": before,
            "files": files,
        }
        with open(work / MANIFEST, "x", encoding="utf-8") as fh:
            json.dump(manifest, fh, indent=2, ensure_ascii=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        _fsync_dir(work)
        os.rename(work, final)
        _fsync_dir(destination)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    report(f"backup written: {final}")
    return final


def complete_backups(destination: Path) -> list[Path]:
    """The whole backups in `destination`, oldest first (by their names' time)."""
    if not destination.is_dir():
        return []
    return sorted(
        p
        for p in destination.iterdir()
        if p.is_dir() and p.name.startswith(PREFIX) and (p / MANIFEST).is_file()
    )


def prune_backups(destination: Path, keep: int, report: Report = _quiet) -> list[Path]:
    """Delete all but the newest `keep` whole backups in `destination`; return those deleted."""
    if keep < 1:
        raise BackupError("--keep must be at least 1")
    old = complete_backups(destination)[:-keep]
    for path in old:
        shutil.rmtree(path)
        report(f"deleted old backup {path}")
    return old


# --- verify and restore ---------------------------------------------------------------------


@dataclass
class Restored:
    backup: Path
    database: str
    files: int
    pending: list[str] = field(default_factory=list)


def _safe_relative(text: str) -> PurePosixPath:
    path = PurePosixPath(text)
    if path.is_absolute() or not path.parts or any(p in ("", ".", "..") for p in path.parts):
        raise BackupError(f"{MANIFEST}: {text!r} is not a path inside the backup")
    return path


def read_manifest(backup: Path) -> dict[str, Any]:
    path = Path(backup) / MANIFEST
    if not path.is_file():
        raise BackupError(f"{path}: missing; {backup} is not a complete backup")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise BackupError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupError(f"{path}: not a manifest of an issue-annotator backup")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise BackupError(
            f"{path}: format_version {manifest.get('format_version')!r}; this code reads "
            f"{FORMAT_VERSION}"
        )
    files = manifest.get("files")
    if not isinstance(files, list) or not all(
        isinstance(e, dict) and {"path", "bytes", "sha256"} <= set(e) for e in files
    ):
        raise BackupError(f"{path}: 'files' must list path, bytes and sha256 of each file")
    if not isinstance(manifest.get("migrations"), dict):
        raise BackupError(f"{path}: 'migrations' is missing")
    return manifest


def verify_backup(backup: Path) -> dict[str, Any]:
    """The manifest, once every file matches it: each listed file present with its size and
    SHA-256, and no file that it does not list. Refused naming the first file that does not."""
    backup = Path(backup)
    manifest = read_manifest(backup)
    listed: set[str] = set()
    for entry in manifest["files"]:
        relative = _safe_relative(entry["path"])
        listed.add(relative.as_posix())
        path = backup / relative
        if not path.is_file():
            raise BackupError(f"{relative}: listed in {MANIFEST} but missing from the backup")
        if path.stat().st_size != entry["bytes"]:
            raise BackupError(
                f"{relative}: {path.stat().st_size} bytes, the manifest says {entry['bytes']}"
            )
        if sha256_of(path) != entry["sha256"]:
            raise BackupError(f"{relative}: SHA-256 differs from the manifest (changed or damaged)")
    if DUMP not in listed:
        raise BackupError(f"{MANIFEST}: lists no {DUMP}")
    for path in sorted(backup.rglob("*")):
        name = path.relative_to(backup).as_posix()
        if path.is_file() and name != MANIFEST and name not in listed:
            raise BackupError(f"{name}: in the backup but not in {MANIFEST}")
    return manifest


def database_tables(alias: str = "default") -> list[str]:
    """Tables, views and sequences in the database outside PostgreSQL's own schemas."""
    with connections[alias].cursor() as cursor:
        cursor.execute(
            "SELECT n.nspname || '.' || c.relname FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f') "
            "AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
            "AND n.nspname NOT LIKE 'pg_toast%%' AND n.nspname NOT LIKE 'pg_temp%%' "
            "ORDER BY 1"
        )
        return [row[0] for row in cursor.fetchall()]


def _file_targets(manifest: dict[str, Any]) -> list[tuple[dict[str, Any], Path]]:
    export_root = Path(settings.EXPORT_ROOT)
    targets = []
    for entry in manifest["files"]:
        relative = _safe_relative(entry["path"])
        if relative.as_posix() == DUMP:
            continue
        if relative.parts[:2] != (FILES, EXPORTS) or len(relative.parts) < 3:
            raise BackupError(f"{relative}: not a file this code knows where to restore")
        targets.append((entry, export_root.joinpath(*relative.parts[2:])))
    return targets


def _clear_site_cache(report: Report) -> None:
    """Delete this site's cache keys (its KEY_PREFIX only: the broker may share the Redis
    database, and its queue must survive): cached rows of the database before the restore."""
    from django.core.cache import cache

    prefix = settings.CACHES["default"].get("KEY_PREFIX", "")
    client_of: Any = getattr(cache, "_cache", None)  # Django's RedisCache's private client
    if client_of is None or not hasattr(client_of, "get_client"):
        cache.clear()  # local memory: this process only
        return
    if not prefix:
        report("cache: no KEY_PREFIX; flush the site's cache by hand (docs/OPERATIONS.md)")
        return
    client = client_of.get_client(write=True)
    keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
    for start in range(0, len(keys), 1000):
        client.delete(*keys[start : start + 1000])
    report(f"cache: {len(keys)} key(s) of {prefix!r} deleted")


def restore_backup(
    backup: Path, force: bool = False, pg_bin: str | None = None, report: Report = _quiet
) -> Restored:
    """Restore `backup` into the configured database and EXPORT_ROOT (see the module's text)."""
    backup = Path(backup).resolve()
    db = _database()
    report(f"verifying {backup}")
    manifest = verify_backup(backup)
    newer = unknown_migrations(manifest["migrations"])
    if newer:
        raise BackupError(
            "the backup is newer than this code (migrations it does not have: "
            f"{', '.join(newer)}); restore it with the code it was made with "
            f"(git commit {manifest.get('git_commit') or 'unknown'})"
        )
    tables = database_tables()
    if tables and not force:
        raise BackupError(
            f"database {db['NAME']} is not empty ({len(tables)} tables, e.g. {tables[0]}); "
            "restore into an empty database, or pass --force to replace its public schema"
        )
    targets = _file_targets(manifest)
    clashes = [
        target
        for entry, target in targets
        if target.exists() and (not target.is_file() or sha256_of(target) != entry["sha256"])
    ]
    if clashes and not force:
        raise BackupError(
            f"{clashes[0]}: exists with other content ({len(clashes)} such file(s) under "
            f"{settings.EXPORT_ROOT}); restore into an empty DATA_DIR, or pass --force"
        )

    major, _ = _server_major()
    pg_restore, version = find_tool("pg_restore", major, pg_bin)
    if tables:
        report(f"--force: dropping the public schema of {db['NAME']} ({len(tables)} tables)")
        with connection.cursor() as cursor:
            cursor.execute("DROP SCHEMA IF EXISTS public CASCADE")
            cursor.execute("CREATE SCHEMA public")
    connections.close_all()
    report(f"restoring the database into {db['NAME']} ({version})")
    _run(
        [
            pg_restore,
            "--no-owner",
            "--no-privileges",
            "--exit-on-error",
            "--single-transaction",
            "--no-password",
            f"--dbname={db['NAME']}",
            str(backup / DUMP),
        ],
        pg_environment(db),
        "pg_restore",
    )

    report(f"restoring {len(targets)} file(s) into {settings.EXPORT_ROOT}")
    for entry, target in targets:
        source = backup / _safe_relative(entry["path"])
        if target.is_file() and sha256_of(target) == entry["sha256"]:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.restore-{os.getpid()}")
        temporary.unlink(missing_ok=True)
        digest = _copy(source, temporary)
        if digest != entry["sha256"]:
            temporary.unlink()
            raise BackupError(f"{entry['path']}: changed while it was being restored")
        os.chmod(temporary, int(entry.get("mode", 0o644)) & 0o777)
        if target.exists():
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink()
        os.rename(temporary, target)
    for directory in sorted({t.parent for _, t in targets}):
        _fsync_dir(directory)

    restored_state = applied_migrations()
    if restored_state != manifest["migrations"]:
        raise BackupError(
            f"the restored database's migrations differ from {MANIFEST}'s: the dump and the "
            "manifest are not of the same backup"
        )
    _clear_site_cache(report)
    pending = pending_migrations()
    return Restored(backup=backup, database=db["NAME"], files=len(targets), pending=pending)


def describe(manifest: dict[str, Any]) -> Iterable[str]:
    """A few lines a person reads about a backup."""
    database = manifest.get("database", {})
    yield f"created_at: {manifest.get('created_at')}"
    yield f"code: {manifest.get('app_version')} (git {manifest.get('git_commit') or 'unknown'})"
    yield f"database: {database.get('name')} (PostgreSQL {database.get('server_version')})"
    total = sum(int(e["bytes"]) for e in manifest["files"])
    yield f"files: {len(manifest['files'])}, {total} bytes"
