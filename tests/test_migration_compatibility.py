"""Migrations stay backward-compatible for one release (docs/OPERATIONS.md, "Upgrading"):
Olga upgrades the web hosts one at a time, so for a while the previous release's code serves
requests against a database the new release has migrated. A migration must therefore leave
the old code working:

- a new column is nullable or has a database default (`null=True` or `db_default=`): the old
  code inserts rows without it;
- a column becomes NOT NULL, or a column, table or name goes away, only in the release after
  the one that stopped using it.

A migration that must break this says so, and why, in a module-level
`BREAKS_PREVIOUS_RELEASE = "…"` (the upgrade then needs every host stopped; the release notes
say so). The migrations below were written before the rule and are left as they are.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from django.db import models
from django.db.migrations import Migration
from django.db.migrations import operations as ops
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import ProjectState

OURS = {
    "config", "taxonomy", "annotator", "ingest", "labeling", "agreement", "raters", "dataset",
    "interviews",
}  # fmt: skip

# Written before the rule: each adds a NOT NULL column with a Python-side default, or removes
# columns the code had already stopped reading.
BEFORE_THE_RULE = {
    ("annotator", "0002_labeling"),
    ("annotator", "0005_resolution_based_on_change_requests"),
    ("annotator", "0007_project_policy_guideline_citation"),
    ("annotator", "0010_project_translated_descriptions"),
    ("dataset", "0002_export_scope"),
    ("dataset", "0006_release_citation"),
    ("ingest", "0002_sync_runs_keyword_sets"),
    ("ingest", "0004_sync_parts"),
    ("raters", "0002_run_token_counts"),
    ("raters", "0003_rater_prompt_details"),
    ("taxonomy", "0003_version_origin_project_published_node_source"),
    ("taxonomy", "0005_node_descriptions"),
}

DROPS = (ops.RemoveField, ops.DeleteModel, ops.RenameField, ops.RenameModel, ops.AlterModelTable)


def _database_operations(operations: list[Operation]) -> Iterator[Operation]:
    """What a migration does to the database (a state-only move changes nothing there)."""
    for op in operations:
        if isinstance(op, ops.SeparateDatabaseAndState):
            yield from _database_operations(op.database_operations)
        else:
            yield op


def breaking_operations(migration: Migration, before: ProjectState) -> list[str]:
    """What in `migration` the previous release's code would trip on, described."""
    created = {
        op.name_lower for op in _database_operations(migration.operations)
        if isinstance(op, ops.CreateModel)
    }  # fmt: skip
    found = []
    for op in _database_operations(migration.operations):
        if isinstance(op, DROPS):
            found.append(f"{type(op).__name__} {op.describe()}")
        elif isinstance(op, ops.AddField) and op.model_name_lower not in created:
            field = op.field
            if not (
                field.null or field.many_to_many or field.db_default is not models.NOT_PROVIDED
            ):
                found.append(f"AddField {op.model_name}.{op.name} is NOT NULL without db_default")
        elif isinstance(op, ops.AlterField):
            model = before.models.get((migration.app_label, op.model_name_lower))
            old = model.fields.get(op.name) if model else None
            if old is not None and old.null and not op.field.null:
                found.append(f"AlterField {op.model_name}.{op.name} becomes NOT NULL")
    return found


def _problems() -> list[str]:
    loader = MigrationLoader(None, ignore_no_migrations=True)
    problems = []
    for key, migration in sorted(loader.disk_migrations.items()):
        if key[0] not in OURS or key in BEFORE_THE_RULE:
            continue
        if getattr(sys.modules[type(migration).__module__], "BREAKS_PREVIOUS_RELEASE", ""):
            continue
        before = loader.project_state(key, at_end=False)
        for what in breaking_operations(migration, before):
            problems.append(f"{key[0]}/migrations/{key[1]}.py: {what}")
    return problems


def test_every_migration_leaves_the_previous_release_working():
    problems = _problems()
    assert not problems, (
        "the previous release's code would fail against these (add columns nullable or with "
        "db_default; drop or tighten in the release after; or explain in "
        "BREAKS_PREVIOUS_RELEASE):\n" + "\n".join(problems)
    )


def test_the_list_of_old_migrations_names_only_migrations_that_exist():
    loader = MigrationLoader(None, ignore_no_migrations=True)
    assert not BEFORE_THE_RULE - set(loader.disk_migrations)


@pytest.mark.parametrize(
    ("operation", "breaks"),
    [
        (ops.AddField("project", "colour", models.CharField(max_length=9, default="red")), True),
        (ops.AddField("project", "colour", models.CharField(max_length=9, null=True)), False),
        (ops.AddField("project", "colour", models.CharField(max_length=9, db_default="r")), False),
        (ops.RemoveField("project", "guideline"), True),
        (ops.RenameField("project", "guideline", "guide"), True),
        (ops.DeleteModel("invite"), True),
        (ops.AddIndex("project", models.Index(fields=["name"], name="p_name")), False),
        (ops.SeparateDatabaseAndState(state_operations=[ops.DeleteModel("invite")]), False),
    ],
)
def test_the_rule_tells_what_the_old_code_trips_on(operation, breaks):
    """The probe: each kind of operation the rule names is caught, and the safe forms are not."""
    migration = Migration("0999_probe", "annotator")
    migration.operations = [operation]
    loader = MigrationLoader(None, ignore_no_migrations=True)
    latest = max(name for app, name in loader.disk_migrations if app == "annotator")
    state = loader.project_state(("annotator", latest))
    assert bool(breaking_operations(migration, state)) is breaks


def test_a_column_made_not_null_is_caught():
    loader = MigrationLoader(None, ignore_no_migrations=True)
    latest = max(name for app, name in loader.disk_migrations if app == "dataset")
    state = loader.project_state(("dataset", latest))
    nullable = [name for name, f in state.models["dataset", "exportjob"].fields.items() if f.null]
    assert "started_at" in nullable  # the probe's premise
    migration = Migration("0999_probe", "dataset")
    migration.operations = [ops.AlterField("exportjob", "started_at", models.DateTimeField())]
    assert breaking_operations(migration, state) == [
        "AlterField exportjob.started_at becomes NOT NULL"
    ]
