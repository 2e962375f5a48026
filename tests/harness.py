"""The study taxonomy, loaded once per test session (per xdist worker) for every test.

Loading the study's CSVs takes about 2 s, more than most tests. `install` loads it into the
test database right after the database is set up (committed, outside any test's transaction)
and keeps a copy of the taxonomy tables' rows in snapshot tables beside them, which Django does
not know and so never flushes. A transactional test (`django_db(transaction=True)`, the browser
and worker tests) empties every table when it ends; `restore` then puts the rows back from the
copy in a few milliseconds, with the same ids, so the next test finds the same version.
A reused test database (`--reuse-db`) keeps the version loaded by an earlier session.

The same goes for content types and permissions: a serialized-rollback test's flush skips the
post_migrate signal that makes them, so `restore` sends it when they are missing.

The flush itself (`flush_sql`, put in place of Django's for the session by `tests/conftest.py`)
empties only the tables a test wrote to, with DELETE: PostgreSQL's TRUNCATE of all ~90 tables
swaps every table's and index's files, 2-3 s per transactional test on this machine, where
deleting a few rows takes milliseconds. Content types and permissions (the migrations' rows,
which post_migrate would make again with new ids) are kept, so the post_migrate signal after
the flush has nothing to make and is sent only when they are gone (`after_flush`).

Under pytest-xdist a fresh checkout would run every migration once per worker: instead the
first worker migrates one template database (`test_<name>`, the one a single-process run
uses) with the taxonomy in it, and each worker copies it (`CREATE DATABASE … TEMPLATE`, as
Django's own parallel runner clones), in a second or two (`clone_for_worker`).

Every test client (and so nearly every test that makes a request) builds the middleware chain
anew, and WhiteNoise's middleware reads every static file the finders know (~210, their headers
parsed one by one): 0.1-0.3 s per new client, most of its set-up; `share_static_files` makes
the scan once per session (per settings that shape it) and lets later instances reuse it.
"""

from __future__ import annotations

import re
import zlib

import pytest
from django.contrib.contenttypes.models import ContentType
from django.core.management.color import Style
from django.core.management.sql import emit_post_migrate_signal
from django.db import connection, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from taxonomy.loader import load_study_taxonomy
from taxonomy.models import NodeLineage, Taxonomy, TaxonomyNode, TaxonomyVersion

# In the order their rows can be inserted (a version names its taxonomy, a node its version).
TAXONOMY_MODELS = (Taxonomy, TaxonomyVersion, TaxonomyNode, NodeLineage)
SNAPSHOT_PREFIX = "test_snapshot_"
# The migrations' own rows, which a flush keeps (post_migrate finds them and adds nothing).
KEPT_BY_FLUSH = ("django_content_type", "auth_permission")


def _tables() -> list[tuple[str, str]]:
    names = [model._meta.db_table for model in TAXONOMY_MODELS]
    return [
        (connection.ops.quote_name(name), connection.ops.quote_name(SNAPSHOT_PREFIX + name))
        for name in names
    ]


def install() -> int:
    """Load the study taxonomy (unless this database has it) and snapshot its tables."""
    with transaction.atomic():
        version = load_study_taxonomy(only_if_missing=True)
        with connection.cursor() as cursor:
            for table, snapshot in _tables():
                cursor.execute(f"DROP TABLE IF EXISTS {snapshot}")
                cursor.execute(f"CREATE TABLE {snapshot} AS SELECT * FROM {table}")
    return version.pk


def restore(version_id: int) -> bool:
    """Put the taxonomy back after a test emptied the tables; False when it was still there."""
    if not ContentType.objects.exists():
        emit_post_migrate_signal(verbosity=0, interactive=False, db=connection.alias)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {_tables()[1][0]} WHERE id = %s",  # the versions' table
            [version_id],
        )
        if cursor.fetchone() is not None:
            return False
        with transaction.atomic():
            for table, snapshot in _tables():
                cursor.execute(
                    f"INSERT INTO {table} SELECT * FROM {snapshot} ON CONFLICT DO NOTHING"
                )
    return True


def flush_sql(
    style: Style,
    connection: BaseDatabaseWrapper,
    reset_sequences: bool = True,
    allow_cascade: bool = False,
) -> list[str]:
    """The statements that empty the database after a transactional test: a DELETE of each
    table that has a row (one query finds them), in one transaction; the foreign keys Django
    makes are deferred, so the order does not matter. Django's own TRUNCATE elsewhere."""
    from django.core.management.sql import sql_flush

    if connection.vendor != "postgresql" or reset_sequences or allow_cascade:
        return sql_flush(style, connection, reset_sequences, allow_cascade)
    tables = [
        name
        for name in connection.introspection.django_table_names(
            only_existing=True, include_views=False
        )
        if name not in KEPT_BY_FLUSH
    ]
    if not tables:
        return []
    quote = connection.ops.quote_name
    probe = " UNION ALL ".join(
        f"SELECT %s WHERE EXISTS (SELECT FROM {quote(name)})" for name in tables
    )
    with connection.cursor() as cursor:
        cursor.execute(probe, tables)
        written = [name for (name,) in cursor.fetchall()]
    return [f"DELETE FROM {quote(name)}" for name in written]


def after_flush(verbosity: int, interactive: bool, db: str, **kwargs) -> None:
    """post_migrate after a flush, only when the flush emptied the content types (Django's
    TRUNCATE); after `flush_sql` its receivers would find every row they make already there."""
    if not ContentType.objects.using(db).exists():
        emit_post_migrate_signal(verbosity, interactive, db, **kwargs)


def clone_for_worker(db: BaseDatabaseWrapper) -> bool:
    """Make this xdist worker's test database (`test_<name>_gw<n>`, not there yet) a copy of
    `test_<name>_template`, migrating that one first if it is missing (a database no run uses
    as its own, so nothing a test left behind is copied); False (pytest-django then
    migrates as usual) when the template cannot be copied, say while another run is on it."""
    worker = db.creation._get_test_db_name()
    match = re.fullmatch(r"(.+)_(gw\d+)", worker)
    if db.vendor != "postgresql" or match is None:
        return False
    template = f"{match.group(1)}_template"
    quote = db.ops.quote_name
    exists = "SELECT 1 FROM pg_database WHERE datname = %s"
    with db.creation._nodb_cursor() as cursor:
        cursor.execute(exists, [worker])
        if cursor.fetchone():
            return False
        # One worker builds the template while the others wait (a lock of this server session).
        lock = zlib.crc32(template.encode())
        cursor.execute("SELECT pg_advisory_lock(%s)", [lock])
        try:
            cursor.execute(exists, [template])
            if cursor.fetchone() is None:
                _build_template(db, template)
            db.close()
            try:
                cursor.execute(f"CREATE DATABASE {quote(worker)} TEMPLATE {quote(template)}")
            except Exception:
                return False
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [lock])
    return True


def _build_template(db: BaseDatabaseWrapper, template: str) -> None:
    """Migrate `template` and load the study taxonomy into it, then point the connection back
    at the worker's database settings."""
    from django.conf import settings

    name, test = db.settings_dict["NAME"], dict(db.settings_dict["TEST"])
    db.settings_dict["TEST"]["NAME"] = template
    try:
        db.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False, keepdb=True)
        install()
    finally:
        db.close()
        db.settings_dict["NAME"] = settings.DATABASES[db.alias]["NAME"] = name
        db.settings_dict["TEST"] = test


def transactional(item: pytest.Item) -> bool:
    """Whether the test commits (pytest-django's TransactionTestCase) instead of rolling back."""
    marker = item.get_closest_marker("django_db")
    fixtures = getattr(item, "fixturenames", ())
    return bool(
        (marker and (marker.kwargs.get("transaction") or (marker.args and marker.args[0])))
        or "transactional_db" in fixtures
        or "live_server" in fixtures
    )


# The settings WhiteNoise's scan depends on: the responders it makes (headers, caching, types)
# and the files the finders list.
_STATIC_SETTINGS = (
    "STATIC_URL",
    "STATIC_ROOT",
    "STATICFILES_DIRS",
    "STATICFILES_FINDERS",
    "INSTALLED_APPS",
    "DEBUG",
    "FORCE_SCRIPT_NAME",
    "WHITENOISE_MAX_AGE",
    "WHITENOISE_ALLOW_ALL_ORIGINS",
    "WHITENOISE_CHARSET",
    "WHITENOISE_MIMETYPES",
    "WHITENOISE_ADD_HEADERS_FUNCTION",
    "WHITENOISE_INDEX_FILE",
    "WHITENOISE_IMMUTABLE_FILE_TEST",
    "WHITENOISE_KEEP_ONLY_HASHED_FILES",
    "WHITENOISE_MANIFEST_STRICT",
)


def share_static_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """WhiteNoise's scan of the finders' static files, made once and reused by every later
    middleware instance whose settings are the same (the same files, as the same responders):
    a test client's first request no longer reads every static file."""
    from django.conf import settings
    from whitenoise.middleware import WhiteNoiseMiddleware

    scanned: dict[str, dict] = {}
    scan = WhiteNoiseMiddleware.add_files_from_finders

    def add_files_from_finders(self: WhiteNoiseMiddleware) -> None:
        key = repr([getattr(settings, name, None) for name in _STATIC_SETTINGS])
        found = scanned.get(key)
        if found is None:
            # Scanned into an empty dictionary, so the copy holds the finders' files alone.
            before, self.files = self.files, {}
            scan(self)
            found = scanned[key] = self.files
            self.files = before
        # After STATIC_ROOT's files, over them, as the scan itself would write them.
        self.files.update(found)

    monkeypatch.setattr(WhiteNoiseMiddleware, "add_files_from_finders", add_files_from_finders)
