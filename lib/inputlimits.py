"""What a request or an imported file may hold, checked before the database or the parser fails.

PostgreSQL refuses a NUL character in text (psycopg raises ValueError, which would be a 500),
a string longer than its `varchar` column and an integer outside its column's range (DataError);
Python's `json` raises RecursionError on arrays nested a few thousand deep. The checks here find
those faults first and say where they are, so the caller can answer with a 400 or a
line-numbered message. The limits come from the models' own fields (`max_length`, the
database's integer ranges) and from settings (`MAX_UPLOAD_BYTES`, `MAX_JSON_DEPTH`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.conf import settings
from django.db import connection, models
from django.utils.translation import gettext, gettext_noop

NUL = "\x00"

# A JSON string (escapes included, written so that it cannot backtrack) or a bracket: brackets
# inside strings are skipped whole.
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


class JSONTooDeep(ValueError):
    """JSON nested deeper than the limit; `line` and `column` are where the limit is passed."""

    def __init__(self, line: int, column: int, limit: int) -> None:
        self.line, self.column, self.limit = line, column, limit
        self.message = gettext("nested deeper than %(limit)d levels (MAX_JSON_DEPTH)") % {
            "limit": limit
        }
        super().__init__(
            gettext("line %(line)d, column %(column)d: %(problem)s")
            % {"line": line, "column": column, "problem": self.message}
        )


def check_json_depth(text: str, limit: int | None = None) -> None:
    """Raise JSONTooDeep if arrays and objects nest deeper than `limit` (default: the setting).

    Run before `json.loads`, whose recursion would otherwise end in RecursionError.
    """
    limit = settings.MAX_JSON_DEPTH if limit is None else limit
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                at = match.start()
                line = text.count("\n", 0, at) + 1
                raise JSONTooDeep(line, at - text.rfind("\n", 0, at), limit)
        elif token in "]}":
            depth -= 1


def loads(data: str | bytes, limit: int | None = None) -> Any:
    """`json.loads` behind the depth check; bytes are decoded as `json.loads` decodes them."""
    if isinstance(data, bytes | bytearray):
        data = data.decode(json.detect_encoding(data), "surrogatepass")
    text = data
    check_json_depth(text, limit)
    return json.loads(text)


def find_nul(value: Any, path: str = "") -> str | None:
    """Where the first NUL character is in decoded JSON (a key or a string), else None.

    The answer is a JSON path such as `types[0].name`; `path` is the root's name.
    """
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            if NUL in item:
                return where or "(the document)"
        elif isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                key_path = f"{where}.{key}" if where else str(key)
                if NUL in str(key):
                    return key_path
                stack.append((key_path, child))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", child) for i, child in reversed(list(enumerate(item))))
    return None


def max_length(model: type[models.Model], field: str) -> int | None:
    found = model._meta.get_field(field)
    return found.max_length if isinstance(found, models.Field) else None


def column_limit(model: type[models.Model], field: str) -> int:
    """The max_length of a field that must have one (a CharField, URLField …)."""
    limit = max_length(model, field)
    if limit is None:
        raise TypeError(f"{model.__name__}.{field} has no max_length")
    return limit


def length_error(model: type[models.Model], field: str, value: str) -> str | None:
    """A message if `value` is longer than the model field's column, else None."""
    limit = max_length(model, field)
    if limit is not None and len(value) > limit:
        return gettext("at most %(limit)d characters (this one has %(length)d)") % {
            "limit": limit,
            "length": len(value),
        }
    return None


def integer_range(model: type[models.Model], field: str) -> tuple[int, int]:
    """The values the database can store in an integer field of the model."""
    internal_type = model._meta.get_field(field).get_internal_type()
    low, high = connection.ops.integer_field_range(internal_type)
    # SQLite reports no bounds (None); its integers are 64-bit.
    return (-(2**63) if low is None else low, 2**63 - 1 if high is None else high)


def upload_too_large(size: int) -> str | None:
    """A message if `size` bytes are over MAX_UPLOAD_BYTES, else None."""
    limit = settings.MAX_UPLOAD_BYTES
    if size > limit:
        return gettext("%(size)s bytes; at most %(limit)s bytes (MAX_UPLOAD_BYTES)") % {
            "size": f"{size:,}",
            "limit": f"{limit:,}",
        }
    return None


# The longest CSV cell an importer reads: the csv module's default field limit. The check is ours
# because that limit is process-wide and a library may raise it (frictionless does on import).
CSV_CELL_LIMIT = 131_072
CSV_CELL_MESSAGE = gettext_noop("a cell is over %(limit)s characters")


def csv_cell_message() -> str:
    """Why a record with an oversized cell is refused, in the reader's language."""
    return gettext(CSV_CELL_MESSAGE) % {"limit": f"{CSV_CELL_LIMIT:,}"}


def csv_cell_problem(error: Exception | None = None, cells: list[str] | None = None) -> str | None:
    """Why a CSV record cannot be imported for its size: the csv module's field-limit error, or
    a cell read under a raised limit that is still over ours; None for any other record."""
    if error is not None:
        return csv_cell_message() if "field limit" in str(error) else str(error)
    if cells and any(len(cell) > CSV_CELL_LIMIT for cell in cells):
        return csv_cell_message()
    return None


def row_id(raw: object) -> int | None:
    """A row id typed into a form or a query string, or None if it cannot be one.

    Only ASCII digits: `str.isdigit()` is also true of "²", on which `int()` raises, and
    `int()` reads other scripts' digits. Above bigint no row exists (PostgreSQL would refuse
    the parameter).
    """
    if not isinstance(raw, str) or not (raw.isascii() and raw.isdigit()):
        return None
    value = int(raw)
    return value if 0 < value < 2**63 else None
