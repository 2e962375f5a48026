"""A GIN index for the issue list's full-text search (labeling.issue_list), PostgreSQL only.

The index is on an expression, not a column: the search query must repeat exactly this
expression (`labeling.issue_list.SEARCH_DOCUMENT_SQL` builds it from the same text) for the
planner to use it. SQLite (the embedded first look) has no such index; the issue list searches
there with `icontains`. Superseded by 0007 (a stored document column with its own index).
"""

from django.db import migrations

INDEX = "ingest_issue_search_english"
# Kept in step with labeling.issue_list.search_document (a test checks the plan uses the index).
DOCUMENT = "to_tsvector('english'::regconfig, COALESCE(title, '') || ' ' || COALESCE(body, ''))"


def create_index(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {INDEX} ON ingest_issue USING gin (({DOCUMENT}))")


def drop_index(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [
        ("ingest", "0005_issue_study_year"),
    ]

    operations = [migrations.RunPython(create_index, drop_index)]
