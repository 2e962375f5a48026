"""Whether the kept test databases (`--reuse-db`) still match the migrations and the study
taxonomy; `bin/test` runs this before pytest:

    .venv/bin/python -m tests.dbstamp "$DATABASE_URL"

A stamp per database URL (`.venv/.test-db-<digest of the URL>`) records a digest of every
file the databases are built from (each app's migrations, the taxonomy loader, the study's
CSVs) and of each file alone. When the files match the stamp nothing happens. Otherwise the
test databases of that URL (`test_<name>`, its `_template` and its `_gw<n>` copies) are
dropped, the message names the files that changed (or says there was no stamp), and the stamp
is written at once: from then on the databases are either gone or built by pytest-django from
these very files. So a run interrupted afterwards (Ctrl-C, a killed terminal) leaves the
stamp in place and the next run reuses what was built; a database it left half-migrated is
migrated the rest of the way by pytest-django (`migrate` runs on a kept database too, each
migration in its own transaction). Only a changed file drops them again.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
STAMP_DIR = ROOT / ".venv"
# What a test database is built from, as globs under the repository's root.
SOURCES = ("*/migrations/*.py", "taxonomy/loader.py", "taxonomy/data/study/*")
SHOWN = 5  # changed files named in the message


def source_files(root: Path = ROOT, patterns: Iterable[str] = SOURCES) -> list[Path]:
    return sorted({p for pattern in patterns for p in root.glob(pattern) if p.is_file()})


def fingerprint(files: Iterable[Path], root: Path = ROOT) -> dict[str, str]:
    """Each file's SHA-1 by its path under `root`."""
    return {
        str(path.relative_to(root)): hashlib.sha1(path.read_bytes()).hexdigest() for path in files
    }


def stamp_path(url: str, stamp_dir: Path = STAMP_DIR) -> Path:
    return stamp_dir / f".test-db-{hashlib.sha1(url.encode()).hexdigest()[:12]}.json"


def changes(old: dict[str, str] | None, new: dict[str, str]) -> list[str]:
    """What differs, one entry a file: "changed x", "added y", "removed z"."""
    if old is None:
        return []
    out = [f"changed {name}" for name in sorted(new) if name in old and old[name] != new[name]]
    out += [f"added {name}" for name in sorted(set(new) - set(old))]
    out += [f"removed {name}" for name in sorted(set(old) - set(new))]
    return out


def _read(stamp: Path) -> dict[str, str] | None:
    try:
        data = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    return files if isinstance(files, dict) else None


def database_names(url: str) -> tuple[str, str, str]:
    """The names pytest-django and `tests.harness` give this URL's test databases: the one
    database, its template, and the LIKE pattern of the xdist workers' copies."""
    name = "test_" + urlsplit(url).path.lstrip("/")
    return name, name + "_template", name.replace("_", r"\_") + r"\_gw%"


def drop_test_databases(url: str) -> list[str]:
    """Drop this URL's test databases; their names."""
    import psycopg

    parts = urlsplit(url)
    name, template, workers = database_names(url)
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        found = [
            row[0]
            for row in conn.execute(
                "SELECT datname FROM pg_database"
                " WHERE datname IN (%s, %s) OR datname LIKE %s ORDER BY datname",
                [name, template, workers],
            ).fetchall()
        ]
        for database in found:
            conn.execute(f'DROP DATABASE "{database}"')
    return found


def prepare(
    url: str,
    files: Iterable[Path] | None = None,
    root: Path = ROOT,
    stamp_dir: Path = STAMP_DIR,
) -> str | None:
    """Drop the test databases when what they are built from changed, and stamp; the reason
    they were dropped, or None when they are kept."""
    current = fingerprint(source_files(root) if files is None else files, root)
    stamp = stamp_path(url, stamp_dir)
    recorded = _read(stamp)
    if recorded == current:
        return None
    changed = changes(recorded, current)
    if recorded is None:
        reason = "no stamp of what they were built from (a first run here, or an older bin/test)"
    elif changed:
        more = f" and {len(changed) - SHOWN} more" if len(changed) > SHOWN else ""
        reason = ", ".join(changed[:SHOWN]) + more
    else:
        reason = "the stamp differs"
    drop_test_databases(url)
    stamp_dir.mkdir(parents=True, exist_ok=True)
    partial = stamp.with_name(stamp.name + ".part")
    partial.write_text(json.dumps({"url_digest": stamp.stem, "files": current}, indent=0))
    partial.replace(stamp)  # never a half-written stamp
    return reason


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.dbstamp DATABASE_URL", file=sys.stderr)
        return 2
    # The stamps of bin/test before this module: empty files named by one digest of the URL
    # and the files together, which an interrupted run never wrote.
    for old in STAMP_DIR.glob(".test-db-*"):
        if not old.name.endswith((".json", ".part")):
            old.unlink(missing_ok=True)
    reason = prepare(argv[0])
    if reason is not None:
        print(f"==> dropped the test databases: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
