"""The study's taxonomy detail files (`rootcause,subcategory,symptoms`) written from a version.

One row per sub-theme, in the order of the file the version was read from; the third cell lists
the version's details as stored (repeats and punctuation kept), optionally followed by extra
items (a project's reviewed summaries, see `labeling.details`). Loading the study's files and
writing them back gives them back (docs/DATASET.md). Every cell and every item is written
spreadsheet-safe through `lib.csvsafe`.
"""

from __future__ import annotations

import io
import re
from typing import TextIO

from lib import csvsafe
from taxonomy.loader import TYPE_FILES
from taxonomy.models import TaxonomyNode, TaxonomyVersion


class DetailError(ValueError):
    """A detail file that cannot be written (e.g. no such type in the version)."""


DETAIL_COLUMNS = ("rootcause", "subcategory", "symptoms")
FULLWIDTH_COMMA = "\uff0c"  # not a separator when the study's loader reads the file back
BOM = "\ufeff"


def study_file_name(type_code: str) -> str:
    """The study's file name for a type (question_intents.csv …), else `details-<code>.csv`."""
    for code, _name, filename in TYPE_FILES:
        if code == type_code:
            return filename
    return f"details-{re.sub(r'[^A-Za-z0-9._-]', '_', type_code)}.csv"


def file_order(version: TaxonomyVersion, type_code: str) -> list[tuple[TaxonomyNode, TaxonomyNode]]:
    """(theme, sub-theme) pairs of one type in the order of the file they were read from.

    Themes in tree order; sub-themes by their row in the file (the paper renumbers some), nodes
    added since (no row) after them in tree order.
    """
    nodes = list(version.nodes.order_by("level", "position", "pk"))
    issue_type = next((n for n in nodes if n.level == 1 and n.code == type_code), None)
    if issue_type is None:
        raise DetailError(f"type: no issue type {type_code!r} in {version}")
    themes = [n for n in nodes if n.parent_id == issue_type.pk]
    pairs = []
    for theme in themes:
        subs = [n for n in nodes if n.parent_id == theme.pk]
        subs.sort(key=lambda n: (n.source_row is None, n.source_row or 0, n.position, n.pk))
        pairs += [(theme, sub) for sub in subs]
    return pairs


def summary_item(text: str) -> str:
    """An annotator's summary as one detail: one line, and no ASCII comma to split it."""
    return " ".join(text.split()).replace(",", FULLWIDTH_COMMA)


def detail_cells(node: TaxonomyNode, extra: list[str], with_version_details: bool) -> list[str]:
    """The node's details cell(s), each item spreadsheet-safe; `extra` joins the last cell.

    A row the study's file spilled over several cells is written over the same cells, so the
    file reads back as it was; once its details have changed it is written as one cell.
    """
    own = list(node.details) if with_version_details else []
    groups: list[list[str]] = [own]
    counts = node.detail_cells
    if with_version_details and len(counts) > 1 and sum(counts) == len(own):
        groups, at = [], 0
        for n in counts:
            groups.append(own[at : at + n])
            at += n
    groups[-1] = groups[-1] + extra
    # Items are neutralised one by one, not only the cell: a spreadsheet's "text to columns"
    # on the commas would turn "…,=HYPERLINK(…)" into a formula cell.
    return [",".join(csvsafe.neutralise(item) for item in group) for group in groups]


def write_detail_csv(
    out: TextIO,
    version: TaxonomyVersion,
    type_code: str,
    summaries: dict[str, list[str]] | None = None,
    *,
    with_version_details: bool = True,
) -> int:
    """One type's detail file in the study's shape, `rootcause,subcategory,symptoms`; rows written.

    One row per sub-theme of `version`, in the order of the file it was read from; the third
    cell lists the version's details as stored (repeats and punctuation kept) followed by
    `summaries` (sub-theme code → texts), each made one detail by `summary_item`. Loading the
    study's files and writing them with no summaries gives them back (the CSV parses the same,
    see docs/DATASET.md). Every cell and every detail goes through `lib.csvsafe`; the study's
    files hold no formula-like detail, so that changes nothing of theirs.
    """
    pairs = file_order(version, type_code)
    summaries = summaries or {}
    out.write(BOM)
    writer = csvsafe.writer(out)
    writer.writerow(DETAIL_COLUMNS)
    for theme, sub in pairs:
        extra = [summary_item(t) for t in summaries.get(sub.code, []) if t.strip()]
        writer.writerow([theme.name, sub.name, *detail_cells(sub, extra, with_version_details)])
    return len(pairs)


def export_version_csv(version: TaxonomyVersion, type_code: str) -> str:
    """A version's detail file for one type, as the study's loader reads it (no summaries)."""
    out = io.StringIO()
    write_detail_csv(out, version, type_code)
    return out.getvalue()
