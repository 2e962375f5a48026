"""Two indexes of issues by creation date, for the issue list's default sort (issue #30
item 5): (created_at DESC NULLS LAST, id DESC) for newest first and (created_at, id) for
oldest first, issues without a date last either way, as `labeling.issue_list` sorts them.

The list read every issue of the project, joined, to sort them (0.6 s for a project of
387,420 issues, bench/RESULTS.md); with these it reads issues in the list's order and stops
when a page is full. PostgreSQL only: SQLite (the embedded first look) cannot order an index's
NULLs, and its lists are small.
"""

from django.db import migrations

INDEXES = {
    "ingest_issue_created_desc": "(created_at DESC NULLS LAST, id DESC)",
    "ingest_issue_created_asc": "(created_at, id)",
}


def add_indexes(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    table = apps.get_model("ingest", "Issue")._meta.db_table
    for name, columns in INDEXES.items():
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {table} {columns}")


def drop_indexes(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):

    dependencies = [
        ('ingest', '0010_sec_issue_url_per_repository'),
    ]

    operations = [migrations.RunPython(add_indexes, drop_indexes)]
