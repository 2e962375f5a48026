"""The issue list's full-text search reads a stored document instead of an expression index.

Migration 0006 indexed the expression `to_tsvector(title || body)`. PostgreSQL prices that
function at a few microseconds a row where it takes a few hundred on issue text, so for a
common word, an excluded word (`-lorem`) or a phrase (whose matches are checked again row by
row) it recomputed the document for every issue: 27 to 76 s at 40,000 issues (#20 F2,
bench/RESULTS.md). Here the document is a generated column, computed once when an issue is
written (by any path: the ORM, ingest's COPY, plain SQL) and read from then on, with a GIN index
on the column; `labeling.issue_list.StoredDocument` reads it. Adding the column computes it for
every stored issue (about 0.3 ms each). PostgreSQL only: SQLite (the embedded first look)
searches by substring and gets neither the column nor the index.
"""

from django.db import migrations

COLUMN = "search_document"
INDEX = "ingest_issue_search_document"
OLD_INDEX = "ingest_issue_search_english"
# The document of migration 0006, unchanged: the same words are found as before.
DOCUMENT = "to_tsvector('english'::regconfig, COALESCE(title, '') || ' ' || COALESCE(body, ''))"


def add_column(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        f"ALTER TABLE ingest_issue ADD COLUMN IF NOT EXISTS {COLUMN} tsvector"
        f" GENERATED ALWAYS AS ({DOCUMENT}) STORED"
    )
    schema_editor.execute(
        f"CREATE INDEX IF NOT EXISTS {INDEX} ON ingest_issue USING gin ({COLUMN})"
    )
    schema_editor.execute(f"DROP INDEX IF EXISTS {OLD_INDEX}")
    # The new column has no statistics until autovacuum gets to it: without them the planner
    # takes every word for a rare one (200 rows of 40,000 for a word in 36,777).
    schema_editor.execute("ANALYZE ingest_issue")


def drop_column(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        f"CREATE INDEX IF NOT EXISTS {OLD_INDEX} ON ingest_issue USING gin (({DOCUMENT}))"
    )
    schema_editor.execute(f"ALTER TABLE ingest_issue DROP COLUMN IF EXISTS {COLUMN}")


class Migration(migrations.Migration):
    dependencies = [
        ("ingest", "0006_issue_search_index"),
    ]

    operations = [migrations.RunPython(add_column, drop_column)]
