"""Reading an uploaded CSV record by record with its line number: the one CSV read loop of the
uploads (`raters.imports`, `ingest.issue_files`, `dataset.importer`).

A record the csv module cannot read (a cell over its field limit, a stray quote) is reported on
its line and reading goes on, so one pass finds every bad line; a cell longer than
`inputlimits.CSV_CELL_LIMIT` is reported the same way. What the lines themselves raise (a
file that is not UTF-8) goes to the caller, and `Records.line_num` says how far reading got.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator

from lib import inputlimits

Record = tuple[int, list[str] | None, str | None]


class Records(Iterator[Record]):
    """(line, cells, None) for a readable record, (line, None, why) for one that is not."""

    def __init__(self, lines: Iterable[str]) -> None:
        self._reader = csv.reader(lines)

    @property
    def line_num(self) -> int:
        """The number of lines read so far (a record may span several)."""
        return self._reader.line_num

    def __next__(self) -> Record:
        try:
            row = next(self._reader)
        except csv.Error as exc:
            return self._reader.line_num, None, inputlimits.csv_cell_problem(exc)
        too_long = inputlimits.csv_cell_problem(cells=row)
        if too_long:
            return self._reader.line_num, None, too_long
        return self._reader.line_num, row, None


def records(lines: Iterable[str]) -> Records:
    """The records of `lines` (a file opened with `newline=""`, or a `StringIO` of its text)."""
    return Records(lines)
