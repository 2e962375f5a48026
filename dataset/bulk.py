"""Fast inserts: PostgreSQL COPY for the hundreds of thousands of rows of a study import.

Django's bulk_create builds a model instance per row and a large INSERT per batch; a full
study (270,000 annotations) takes most of a minute that way on a small machine, while COPY
streams the same rows in a few seconds. Columns the caller does not give get the model
field's default, so a field added later with a default keeps working. Other databases (the
SQLite first-look setup) fall back to bulk_create.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import contextmanager

from django.db import connection, models
from django.utils import timezone

BATCH = 5000


def insert_rows(model: type[models.Model], columns: Sequence[str], rows: Iterable[Sequence]) -> int:
    """Insert rows (values in `columns` order, by attname) into the model's table."""
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    given = list(columns)
    missing = [f for f in fields if f.attname not in given]
    if connection.vendor != "postgresql":
        count = 0
        objects = []
        for row in rows:
            objects.append(model(**dict(zip(given, row, strict=True))))
            count += 1
        model.objects.bulk_create(objects, batch_size=BATCH)
        return count
    # Defaults are computed once (timezone.now too: one import, one timestamp).
    now = timezone.now()
    extra = [
        f.get_db_prep_save(
            now
            if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)
            else f.get_default(),
            connection,
        )
        for f in missing
    ]
    from psycopg import sql

    names = [model._meta.get_field(n).column for n in given] + [f.column for f in missing]
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(model._meta.db_table), sql.SQL(", ").join(map(sql.Identifier, names))
    )
    count = 0
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row((*row, *extra))
            count += 1
    return count


# Below this many rows, per-row foreign-key checks cost less than dropping and re-adding.
REVALIDATE_FROM = 20_000


@contextmanager
def foreign_keys_validated_at_end(model: type[models.Model], rows: int):
    """For a large load, check the table's foreign keys once at the end, not row by row.

    PostgreSQL's own advice for bulk loads ("Populating a Database"): drop the foreign-key
    constraints, load, add them again; adding validates every row in one join instead of
    a trigger per row and key (1.3 million for a full study's annotations). Inside the
    caller's transaction, so a failure restores them; the table is locked meanwhile.
    """
    if connection.vendor != "postgresql" or rows < REVALIDATE_FROM:
        yield
        return
    from psycopg import sql

    table = sql.Identifier(model._meta.db_table)
    with connection.cursor() as cursor:
        # ALTER TABLE refuses while rows of this or a referenced table (e.g. the project
        # just created) have deferred checks pending: run them now.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conrelid = %s::regclass AND contype = 'f'",
            [model._meta.db_table],
        )
        constraints = cursor.fetchall()
        for name, _ in constraints:
            cursor.execute(
                sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(table, sql.Identifier(name))
            )
    yield
    with connection.cursor() as cursor:
        for name, definition in constraints:
            cursor.execute(
                sql.SQL("ALTER TABLE {} ADD CONSTRAINT {} ").format(table, sql.Identifier(name))
                + sql.SQL(definition)
            )
        # Back to Django's default (its foreign keys are INITIALLY DEFERRED) for the rest of
        # the caller's transaction.
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
