"""CSV cells that are safe to open in a spreadsheet (OWASP "CSV injection").

A spreadsheet treats a cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return as a
formula. Every CSV the app writes goes through `writer()`, which prefixes such a text cell with
a single quote so that it is shown as text. Numbers (ints, floats, and strings that are plain
decimal numbers such as "-0.25") are left alone: a spreadsheet reads them as numbers, not
formulas.

The study's own file format is the one exception (`study_format=True`): its cells are validated
instead of altered, because the published files must come back byte for byte. The caller
validates those columns (URLs are forge issue URLs, labels are codes) before writing them.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from typing import Any, TextIO

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def neutralise(value: Any) -> Any:
    """The cell as a spreadsheet will show it as text: formula-like text gets a leading `'`."""
    if not isinstance(value, str) or not value.startswith(TRIGGERS):
        return value
    if _NUMBER.fullmatch(value):
        return value
    return "'" + value


def is_formula_like(value: Any) -> bool:
    """True if a spreadsheet could read the cell as a formula (what `neutralise` changes)."""
    return neutralise(value) is not value


class SafeWriter:
    """`csv.writer` whose rows are neutralised cell by cell."""

    def __init__(self, out: TextIO, **kwargs: Any) -> None:
        kwargs.setdefault("lineterminator", "\n")
        self._writer = csv.writer(out, **kwargs)

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._writer.writerow([neutralise(cell) for cell in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def writer(out: TextIO, **kwargs: Any) -> SafeWriter:
    """A CSV writer for any file the app hands to a person (exports, codebook, details)."""
    return SafeWriter(out, **kwargs)
