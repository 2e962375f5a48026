"""Reading an uploaded CSV record by record with its line number.

A record the csv module cannot read (a cell over its field limit, a stray quote) is reported on
its line and reading goes on, so one pass finds every bad line; a cell longer than
`inputlimits.CSV_CELL_LIMIT` is reported the same way.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator

from lib import inputlimits


def records(lines: Iterable[str]) -> Iterator[tuple[int, list[str] | None, str | None]]:
    """(line, cells, None) for a readable record, (line, None, why) for one that is not."""
    reader = csv.reader(lines)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield reader.line_num, None, inputlimits.csv_cell_problem(exc)
            continue
        too_long = inputlimits.csv_cell_problem(cells=row)
        if too_long:
            yield reader.line_num, None, too_long
            continue
        yield reader.line_num, row, None
