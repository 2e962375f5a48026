"""When each queue item's newest current label came, stored on the item (`last_label_at`),
with indexes for the issue list's sort by last label (issue #30 item 5).

The issue list found it per row with a subquery over the annotations: sorting a project of
387,420 issues by it ran that subquery for every issue (1.5 s at ten times the study,
bench/RESULTS.md). From here it is written where a label is stored (`labeling.submission`,
both paths; `dataset.importer`; the demo's dates), and this migration fills it once from the
current annotations (the newest one's `created_at`; None for an issue nobody labeled).

Two indexes, the list's order each way, issues nobody labeled last either way:
(project, last_label_at DESC NULLS LAST, id DESC) and (project, last_label_at, id).
PostgreSQL only, since SQLite (the embedded first look) cannot order an index's NULLs.
"""

from django.db import migrations, models

INDEXES = {
    "projectissue_last_label": "(project_id, last_label_at DESC NULLS LAST, id DESC)",
    "projectissue_last_label_asc": "(project_id, last_label_at, id)",
}


def fill(apps, schema_editor) -> None:
    items = apps.get_model("labeling", "ProjectIssue")._meta.db_table
    annotations = apps.get_model("labeling", "Annotation")._meta.db_table
    # One grouped pass over the current annotations (2.7 million at ten times the study), then
    # one write per labeled item.
    schema_editor.execute(
        f"UPDATE {items} SET last_label_at = newest.at"
        f" FROM (SELECT project_id, issue_id, max(created_at) AS at FROM {annotations}"
        "        WHERE is_current GROUP BY project_id, issue_id) newest"
        f" WHERE newest.project_id = {items}.project_id AND newest.issue_id = {items}.issue_id"
    )


def add_index(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    items = apps.get_model("labeling", "ProjectIssue")._meta.db_table
    for name, columns in INDEXES.items():
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {items} {columns}")
    # Statistics of the new column before the list plans a query on it.
    schema_editor.execute(f"ANALYZE {items}")


def drop_index(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        for name in INDEXES:
            schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):

    dependencies = [
        ('labeling', '0006_dashboard_snapshot'),
    ]

    operations = [
        migrations.AddField(
            model_name='projectissue',
            name='last_label_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
        migrations.RunPython(add_index, drop_index),
    ]
