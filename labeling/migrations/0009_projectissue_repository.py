"""A copy of each queue row's issue's repository on the row, kept by the database (issue #30
item 5): the issue list sorted by number reads a page repository by repository
(`labeling.issue_list.ByRepository`) and so first counts the project's rows per repository.
Counted through the issues, that joined every row of the project (0.4-0.8 s at ten times the
study, 387,420 issues; bench/RESULTS.md "Issue list by number at ten times the study"); from
this column and its index (project, repository) it reads one index.

On PostgreSQL, triggers keep the copy true whatever writes: a queue row's repository is set
from its issue on every insert (COPY included) and on any update of its issue or repository
(a write of another value is overwritten), and an issue moved to another repository moves its
queue rows' copies. Existing rows are filled here. The code never writes the column. On SQLite
it stays NULL, and the list sorts in one query there (`ByRepository` falls back whenever a row
has no repository).
"""

import django.db.models.deletion
from django.db import migrations, models

QUEUE, ISSUES = "annotator_projectissue", "ingest_issue"
INSTALL = f"""
-- Existing rows first, before any trigger would run for each.
UPDATE {QUEUE} q SET repository_id = i.repository_id FROM {ISSUES} i WHERE i.id = q.issue_id;

CREATE OR REPLACE FUNCTION projectissue_repository_of_issue() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.repository_id := (SELECT repository_id FROM {ISSUES} WHERE id = NEW.issue_id);
    RETURN NEW;
END $$;
CREATE TRIGGER projectissue_repository_insert BEFORE INSERT ON {QUEUE}
    FOR EACH ROW EXECUTE FUNCTION projectissue_repository_of_issue();
CREATE TRIGGER projectissue_repository_update BEFORE UPDATE OF issue_id, repository_id
    ON {QUEUE} FOR EACH ROW
    WHEN (NEW.issue_id IS DISTINCT FROM OLD.issue_id
          OR NEW.repository_id IS DISTINCT FROM OLD.repository_id)
    EXECUTE FUNCTION projectissue_repository_of_issue();

CREATE OR REPLACE FUNCTION projectissue_repository_follows_issue() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE {QUEUE} SET repository_id = NEW.repository_id WHERE issue_id = NEW.id;
    RETURN NULL;
END $$;
CREATE TRIGGER projectissue_repository_follows_issue AFTER UPDATE OF repository_id
    ON {ISSUES} FOR EACH ROW WHEN (NEW.repository_id IS DISTINCT FROM OLD.repository_id)
    EXECUTE FUNCTION projectissue_repository_follows_issue();

"""
UNINSTALL = f"""
DROP TRIGGER IF EXISTS projectissue_repository_follows_issue ON {ISSUES};
DROP FUNCTION IF EXISTS projectissue_repository_follows_issue();
DROP TRIGGER IF EXISTS projectissue_repository_update ON {QUEUE};
DROP TRIGGER IF EXISTS projectissue_repository_insert ON {QUEUE};
DROP FUNCTION IF EXISTS projectissue_repository_of_issue();
"""


def install(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(INSTALL)


def analyze(apps, schema_editor) -> None:
    # Every row was rewritten: statistics now, or the count by repository is not read from the
    # index alone until autovacuum comes by.
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ANALYZE {QUEUE}")


def uninstall(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(UNINSTALL)


class Migration(migrations.Migration):

    dependencies = [
        ('annotator', '0014_faults_outbox'),
        ('ingest', '0012_issue_number_order_index'),
        ('labeling', '0008_projectissue_list_status_index'),
    ]

    operations = [
        migrations.AddField(
            model_name='projectissue',
            name='repository',
            field=models.ForeignKey(blank=True, db_constraint=False, db_index=False, editable=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='ingest.repository', verbose_name='repository'),
        ),
        # Filled before the index is built (one build, not 387,420 insertions into it).
        migrations.RunPython(install, uninstall),
        migrations.AddIndex(
            model_name='projectissue',
            index=models.Index(fields=['project', 'repository'], name='projectissue_repository'),
        ),
        migrations.RunPython(analyze, migrations.RunPython.noop),
    ]
