"""PL/pgSQL functions: statements that run together under one row lock, in one round trip.

Reserving the next issue (labeling.queue) and storing a first label (labeling.submission) each
run a few statements in a transaction. Over the network that is a BEGIN, each statement and a
COMMIT, about 0.2 ms of CPU apiece on each side, and every volunteer makes both requests for
every issue. On PostgreSQL the common case of each is one function call instead. The function
runs the same SQL text as the Python version (its `%(name)s` parameters become the function's
`arg_name` arguments and variables), in the implicit transaction of the call. Each statement
of a PL/pgSQL function takes a fresh snapshot, as each statement of the Python version does, so
a count made after a row lock sees what the lock's previous holder committed.

A function's name ends with a hash of its text, so a process calls only the body its code was
written with. `migrate` installs them (post_migrate, like Django's permissions). Where one is
missing, e.g. in a database not migrated since the code changed or recreated under running
processes, the callers run their Python version, which is also what runs on SQLite.
DB_FUNCTIONS=0 turns them off.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, ProgrammingError, connection, connections, transaction

from lib import sql

logger = logging.getLogger(__name__)

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")
_UNDEFINED_FUNCTION = "42883"  # SQLSTATE
# How long "not installed" is believed before pg_proc is asked again.
_RECHECK_SECONDS = 30.0


def plpgsql(statement: str) -> str:
    """One of our statements with its parameters as PL/pgSQL names: %(user)s -> arg_user."""
    return _PLACEHOLDER.sub(r"arg_\1", statement)


@dataclass(frozen=True)
class Function:
    """A PL/pgSQL function called with named parameters, `arguments` in order."""

    base_name: str
    arguments: tuple[tuple[str, str], ...]  # (parameter name, SQL type)
    returns: str
    body: str  # DECLARE ... BEGIN ... END
    name: str = field(init=False)

    def __post_init__(self) -> None:
        text = f"{self.arguments}|{self.returns}|{self.body}"
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        object.__setattr__(self, "name", f"{self.base_name}_{digest}")

    @property
    def create_sql(self) -> str:
        arguments = ", ".join(f"arg_{name} {sql_type}" for name, sql_type in self.arguments)
        return (
            f"CREATE OR REPLACE FUNCTION {self.name}({arguments}) RETURNS {self.returns}"
            f" LANGUAGE plpgsql AS $function$\n{self.body}\n$function$"
        )

    @property
    def call_sql(self) -> str:
        values = ", ".join(f"%({name})s" for name, _ in self.arguments)
        return f"SELECT * FROM {self.name}({values})"


# Builders rather than functions: some need the connection (column types) to be built.
_BUILDERS: list[Callable[[], Function]] = []


def register(builder: Callable[[], Function]) -> Callable[[], Function]:
    """Declare a function (a cached builder of it) for `migrate` to install."""
    cached = cache(builder)
    _BUILDERS.append(cached)
    return cached


# Serializes installs: two `migrate` runs replacing one function at once make PostgreSQL
# fail with "tuple concurrently updated".
_INSTALL_LOCK = 74_201_311


def install(using: str = DEFAULT_DB_ALIAS, **kwargs: Any) -> None:
    """Create every registered function on the database (post_migrate receiver).

    Only the default database: the only one the callers use, and the one whose column types
    the functions are built with.
    """
    target = connections[using]
    if using != DEFAULT_DB_ALIAS or target.vendor != "postgresql":
        return
    # The modules that declare functions registered them when LabelingConfig.ready imported
    # them.
    with transaction.atomic(using=using), target.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_INSTALL_LOCK])
        for builder in _BUILDERS:
            cursor.execute(builder().create_sql)
    _present.clear()


class Missing(Exception):
    """The function is not in the database (any more): run the Python version."""


def first(function: Function, params: dict) -> tuple | None:
    """The first row the function returns, or None; raises Missing if it has disappeared
    since `usable` found it (a database restored or recreated under the running code)."""
    try:
        return sql.first(function.call_sql, params)
    except ProgrammingError as exc:
        vanished = getattr(exc.__cause__, "sqlstate", None) == _UNDEFINED_FUNCTION
        # Inside a transaction the failed call has aborted it: nothing else can run there.
        if not vanished or connections[DEFAULT_DB_ALIAS].in_atomic_block:
            raise
        _present.clear()
        logger.warning("%s has disappeared; run `manage.py migrate`", function.name)
        raise Missing(function.name) from exc


# Database name -> (function names found in pg_proc, when looked).
_present: dict[str, tuple[frozenset[str], float]] = {}


def usable(builder: Callable[[], Function]) -> Function | None:
    """The registered function to call on the default database, or None: run the Python
    version (not PostgreSQL, DB_FUNCTIONS off, or not installed)."""
    if connection.vendor != "postgresql" or not settings.DB_FUNCTIONS:
        return None
    function = builder()
    key = connection.settings_dict["NAME"]
    names, looked = _present.get(key, (frozenset(), 0.0))
    if function.name in names:
        return function
    if time.monotonic() - looked < _RECHECK_SECONDS:
        return None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE n.nspname = current_schema() AND p.proname LIKE %s",
            ["annotator\\_%"],
        )
        names = frozenset(row[0] for row in cursor.fetchall())
    _present[key] = (names, time.monotonic())
    if function.name not in names:
        logger.warning("%s is not installed; run `manage.py migrate`", function.name)
        return None
    return function
