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
"""

from __future__ import annotations

from django.contrib.contenttypes.models import ContentType
from django.core.management.sql import emit_post_migrate_signal
from django.db import connection, transaction

from taxonomy.loader import load_study_taxonomy
from taxonomy.models import NodeLineage, Taxonomy, TaxonomyNode, TaxonomyVersion

# In the order their rows can be inserted (a version names its taxonomy, a node its version).
TAXONOMY_MODELS = (Taxonomy, TaxonomyVersion, TaxonomyNode, NodeLineage)
SNAPSHOT_PREFIX = "test_snapshot_"


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
