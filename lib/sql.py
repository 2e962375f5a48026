"""Hand-written SQL, the project's one module for it: the labeling hot path (next issue,
submit, the user and membership), ingest's page step, and the study import's COPY.

Every volunteer makes two requests per issue, and on those the ORM spent more time compiling
queries (1.5 to 4 ms of Python each) than Postgres spent running them. Statements sent through
here are fixed strings with named parameters. On PostgreSQL they go with server-side binding
as prepared statements (once per connection), and the connection asks for generic plans
(`plan_cache_mode`, set in settings), so Postgres plans each of them once: the queue's
candidate query took 1 ms to plan and 0.5 ms to run. Django itself prepares nothing (its
queries are quoted on the client), so the generic-plan setting touches only these. Set
DB_PREPARED_STATEMENTS=0 behind a pooler that cannot keep prepared statements. On SQLite
(`bin/serve` without a DATABASE_URL) the same statements go through Django's cursor, which
accepts the same `%(name)s` placeholders.

Statements run on Django's connection, so they take part in `transaction.atomic()` blocks
like any ORM query.

Also here: `batch`, positional statements in one round trip (ingest's page step: lock the
part, add the figures to the run, move the cursor, keep the ETag); the converters for values
read or written by plain SQL (`from_json`, `db_time`, `aware_time`); and COPY (`copy_rows`,
`foreign_keys_validated_at_end`) for a study import's hundreds of thousands of rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cache
from typing import Any, TypeVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model, UniqueConstraint
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from psycopg import Cursor
from psycopg import sql as psql
from psycopg.pq import ExecStatus

M = TypeVar("M", bound=Model)


def _run(sql: str, params: dict[str, Any], fetch: str) -> Any:
    """Run a statement on this thread's default connection; `fetch`: "one", "all" or
    "rowcount"."""
    # The wrapper itself, not the `django.db.connection` proxy: every attribute read through
    # the proxy is a context-local lookup, and these functions run a dozen times a request.
    db = connections[DEFAULT_DB_ALIAS]
    # Errors become Django's (IntegrityError, ...) and mark the connection for a health
    # check at the end of the request, as through Django's own cursor.
    with db.wrap_database_errors:
        if db.vendor == "postgresql":
            # CONN_HEALTH_CHECKS, as Django's own cursor does: a persistent connection that
            # died while idle (the server restarted) is replaced before this statement.
            # (`health_check_done` is Django's, which django-stubs does not declare.)
            wrapper: Any = db
            if not wrapper.health_check_done:
                db.close_if_health_check_failed()
            if db.connection is None:
                db.ensure_connection()
            # A plain psycopg cursor binds on the server (Django's default one quotes on the
            # client, which makes every statement's text unique and so never prepared).
            with Cursor(db.connection) as cursor:
                cursor.execute(sql, params, prepare=settings.DB_PREPARED_STATEMENTS)
                # Not `cursor.description`: psycopg builds a Column object per column to
                # answer it, which cost more than the fetch for the membership's 35 columns.
                pgresult = cursor.pgresult
                has_rows = pgresult is not None and pgresult.status == ExecStatus.TUPLES_OK
                return _fetch(cursor, fetch, has_rows)
        with db.cursor() as cursor:
            cursor.execute(sql, params)
            return _fetch(cursor, fetch, cursor.description is not None)


def _fetch(cursor: Any, fetch: str, has_rows: bool) -> Any:
    if fetch == "rowcount":
        return cursor.rowcount
    if fetch == "one":
        return cursor.fetchone() if has_rows else None
    return cursor.fetchall() if has_rows else []


def rows(sql: str, params: dict[str, Any]) -> list[tuple]:
    """All rows of a statement."""
    return _run(sql, params, "all")


def first(sql: str, params: dict[str, Any]) -> tuple | None:
    """The first row of a statement, or None."""
    return _run(sql, params, "one")


def first_row(sql: str, params: dict[str, Any]) -> tuple:
    """The row of a statement that always returns one (an aggregate, an EXISTS)."""
    row = _run(sql, params, "one")
    if row is None:
        raise RuntimeError("the statement returned no row")
    return row


def is_row_id(value: int) -> bool:
    """Whether `value` can be a primary key (a bigint). A larger one is no row, but as a bound
    parameter PostgreSQL would reject it with an error (the ORM answers "no row" itself)."""
    return 0 < value < 2**63


def execute(sql: str, params: dict[str, Any]) -> int:
    """Run a statement; the number of rows it wrote."""
    return _run(sql, params, "rowcount")


def insert(instance: Model) -> None:
    """Insert a new instance (auto primary key) in one statement and set its key.

    Values are prepared by the fields as `Model.save()` prepares them (defaults were applied
    when the instance was made), without save()'s extra queries; no signals are sent.
    """
    model = type(instance)
    values = db_values(instance, insert_fields(model))
    row = first(_insert_sql(model), {f"v{n}": value for n, value in enumerate(values)})
    assert row is not None  # INSERT … RETURNING always returns the row
    mark_stored(instance, row[0])


def db_values(instance: Model, fields: Sequence) -> list:
    """The fields' values as an insert sends them: prepared by each field as `Model.save()`
    prepares them (defaults were applied when the instance was made)."""
    db = connections[DEFAULT_DB_ALIAS]
    return [f.get_db_prep_save(f.pre_save(instance, True), db) for f in fields]


def mark_stored(instance: Model, pk: Any) -> None:
    """Give an instance inserted by hand its key, and the state of a saved instance."""
    setattr(instance, type(instance)._meta.pk.attname, pk)
    instance._state.adding = False
    instance._state.db = DEFAULT_DB_ALIAS


@cache
def insert_fields(model: type[Model]) -> tuple:
    """The columns `insert` writes: every concrete field but the auto primary key."""
    return tuple(f for f in model._meta.concrete_fields if not f.primary_key)


@cache
def _insert_sql(model: type[Model]) -> str:
    meta = model._meta
    fields = insert_fields(model)
    names = ", ".join(f'"{f.column}"' for f in fields)
    values = ", ".join(f"%(v{n})s" for n in range(len(fields)))
    table, pk = meta.db_table, meta.pk.column
    return f'INSERT INTO "{table}" ({names}) VALUES ({values}) RETURNING "{pk}"'


def columns(model: type[Model], alias: str, defer: tuple[str, ...] = ()) -> str:
    """The select list of a model's concrete columns (but `defer`), in `model_from_row`
    order."""
    return ", ".join(f'{alias}."{f.column}"' for f in _fields(model, defer))


# Cached per model and deferred set: rows are turned into instances on every labeling request.
@cache
def _fields(model: type[Model], defer: tuple[str, ...] = ()) -> tuple:
    return tuple(f for f in model._meta.concrete_fields if f.name not in defer)


@cache
def _attnames(model: type[Model], defer: tuple[str, ...] = ()) -> list[str]:
    return [f.attname for f in _fields(model, defer)]


def model_from_row(
    model: type[M], row: Sequence, start: int = 0, defer: tuple[str, ...] = ()
) -> tuple[M, int]:
    """An instance built from `row[start:]` as selected by `columns(model, ..., defer)`.

    Returns the instance and the index of the next column. Built with `Model.from_db`, as the
    ORM builds its own, so the instance behaves like one loaded by a queryset (a deferred
    field loads on first access).
    """
    db = connections[DEFAULT_DB_ALIAS]
    names = _attnames(model, defer)
    end = start + len(names)
    values = [
        value if convert is None else convert(value, db)
        for convert, value in zip(_converters(model, defer, db), row[start:end], strict=True)
    ]
    instance = model.from_db(DEFAULT_DB_ALIAS, names, values)
    return instance, end


_CONVERTERS: dict[tuple, list] = {}


def _converters(model: type[Model], defer: tuple[str, ...], db: BaseDatabaseWrapper) -> list:
    """Per column, what the ORM applies between the database value and the attribute (JSON
    text to objects, SQLite's integers to booleans, ...), or None."""
    key = (model, defer, db.vendor)
    if key not in _CONVERTERS:
        found = []
        for field in _fields(model, defer):
            col = field.get_col(model._meta.db_table)
            steps = db.ops.get_db_converters(col) + col.get_db_converters(db)
            found.append(_chain(steps, col) if steps else None)
        _CONVERTERS[key] = found
    return _CONVERTERS[key]


def _chain(steps: list, col: Any) -> Callable[[Any, BaseDatabaseWrapper], Any]:
    def convert(value: Any, db: BaseDatabaseWrapper) -> Any:
        for step in steps:
            value = step(value, col, db)
        return value

    return convert


# -- positional statements in one round trip (ingest's page step) ---------------------------


def batch(*statements: tuple[str, Sequence[Any]]) -> list[tuple]:
    """Run statements with positional `%s` parameters; the rows of the last one that returns
    rows. On PostgreSQL they go in one round trip, bound on the client through Django's cursor
    (a step's statements differ page to page, so preparing them would gain nothing)."""
    db = connections[DEFAULT_DB_ALIAS]
    found: list[tuple] = []
    with db.cursor() as cursor:
        if db.vendor == "postgresql":
            text = "; ".join(sql for sql, _ in statements)
            cursor.execute(text, [p for _, params in statements for p in params])
            while True:
                if cursor.description is not None:
                    found = cursor.fetchall()
                if not cursor.nextset():
                    return found
        for sql, params in statements:
            cursor.execute(sql, params)
            if cursor.description is not None:
                found = cursor.fetchall()
    return found


def concrete_field(model: type[Model], name: str) -> Field:
    """A model's concrete field by name (a reverse relation has no column and is an error)."""
    field = model._meta.get_field(name)
    if not isinstance(field, Field):
        raise TypeError(f"{model.__name__}.{name} is a reverse relation, not a column")
    return field


def column(model: type[Model], name: str) -> str:
    """The database column of a model's field, by field name."""
    column = concrete_field(model, name).column
    assert column is not None  # only a field not yet attached to a model has none
    return column


def column_names(model: type[Model], names: Sequence[str]) -> str:
    """The quoted columns of a model's fields, by field name, for an INSERT's target list."""
    qn = connections[DEFAULT_DB_ALIAS].ops.quote_name
    return ", ".join(qn(column(model, n)) for n in names)


# -- converters for values read or written by plain SQL -------------------------------------


def from_json(value: Any) -> Any:
    """A JSON column's value as read by plain SQL (SQLite gives its text)."""
    return json.loads(value) if isinstance(value, str | bytes) else value


def db_time(value: datetime | None) -> Any:
    """A time as a plain-SQL parameter (SQLite keeps times as text in the ORM's own format)."""
    return connections[DEFAULT_DB_ALIAS].ops.adapt_datetimefield_value(value)


def aware_time(value: Any) -> datetime | None:
    """A time read by plain SQL, aware (SQLite gives the ORM's naive UTC text)."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if value is not None and timezone.is_naive(value):
        value = timezone.make_aware(value, UTC)
    return value


# -- COPY: the hundreds of thousands of rows of a study import ------------------------------

COPY_FALLBACK_BATCH = 5000
# Below this many rows, per-row foreign-key checks cost less than dropping and re-adding.
REVALIDATE_FROM = 20_000


def copy_rows(model: type[Model], names: Sequence[str], values: Iterable[Sequence]) -> int:
    """Insert rows (values in `names` order, by attname) into the model's table with COPY.

    Django's bulk_create builds a model instance per row and a large INSERT per batch; a full
    study (270,000 annotations) takes most of a minute that way on a small machine, while COPY
    streams the same rows in a few seconds. Columns not given get the model field's default
    (computed once: one import, one timestamp), so a field added later with a default keeps
    working. Other databases (the SQLite first look) fall back to bulk_create.
    """
    db = connections[DEFAULT_DB_ALIAS]
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    given = list(names)
    missing = [f for f in fields if f.attname not in given]
    count = 0
    if db.vendor != "postgresql":
        objects = []
        for row in values:
            objects.append(model(**dict(zip(given, row, strict=True))))
            count += 1
        model._default_manager.bulk_create(objects, batch_size=COPY_FALLBACK_BATCH)
        return count
    now = timezone.now()
    # A column in a unique constraint cannot share one value: its callable default (a random
    # public id) is called for every row.
    per_row = [f for f in missing if f.has_default() and callable(f.default) and _unique(model, f)]
    once = [f for f in missing if f not in per_row]
    extra = [
        f.get_db_prep_save(
            now
            if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)
            else f.get_default(),
            db,
        )
        for f in once
    ]
    targets = [column(model, n) for n in given] + [column(model, f.name) for f in once + per_row]
    statement = psql.SQL("COPY {} ({}) FROM STDIN").format(
        psql.Identifier(model._meta.db_table),
        psql.SQL(", ").join([psql.Identifier(t) for t in targets]),
    )
    with db.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for row in values:
            fresh = [f.get_db_prep_save(f.get_default(), db) for f in per_row]
            copy.write_row((*row, *extra, *fresh))
            count += 1
    return count


def _unique(model: type[Model], field: Field) -> bool:
    """Whether the field's column is unique alone or in one of the model's unique sets."""
    if field.unique:
        return True
    sets = [c.fields for c in model._meta.constraints if isinstance(c, UniqueConstraint)]
    sets += [tuple(names) for names in model._meta.unique_together]
    return any(field.name in names for names in sets)


@contextmanager
def foreign_keys_validated_at_end(
    model: type[Model], rows: int, from_rows: int = REVALIDATE_FROM
) -> Iterator[None]:
    """For a load of at least `from_rows` rows, check the table's foreign keys once at the
    end, not row by row.

    PostgreSQL's own advice for bulk loads ("Populating a Database"): drop the foreign-key
    constraints, load, add them again; adding validates every row in one join instead of
    a trigger per row and key (1.3 million for a full study's annotations). Inside the
    caller's transaction, so a failure restores them; the table is locked meanwhile.
    """
    db = connections[DEFAULT_DB_ALIAS]
    if db.vendor != "postgresql" or rows < from_rows:
        yield
        return
    table = psql.Identifier(model._meta.db_table)
    with db.cursor() as cursor:
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
                psql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(table, psql.Identifier(name))
            )
    yield
    with db.cursor() as cursor:
        for name, definition in constraints:
            cursor.execute(
                psql.SQL("ALTER TABLE {} ADD CONSTRAINT {} ").format(table, psql.Identifier(name))
                + psql.SQL(definition)
            )
        # Back to Django's default (its foreign keys are INITIALLY DEFERRED) for the rest of
        # the caller's transaction.
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")


def analyze(*models: type[Model]) -> None:
    """ANALYZE the models' tables (PostgreSQL; nothing elsewhere), in the caller's transaction,
    which ANALYZE counts its own new rows in.

    After a bulk load: autovacuum analyzes a table only a while later (longer on a busy host),
    and until then the planner takes a table just given millions of rows for the few it held
    and plans nested loops over it. At ten times the study (issue #30) the issue list's
    filtered count ran for minutes instead of a fraction of a second.
    """
    db = connections[DEFAULT_DB_ALIAS]
    if db.vendor != "postgresql":
        return
    with db.cursor() as cursor:
        for model in models:
            cursor.execute(psql.SQL("ANALYZE {}").format(psql.Identifier(model._meta.db_table)))
