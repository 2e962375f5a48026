"""The interview codebook as CSV, in the shape researchers keep it in spreadsheets.

Columns: `Participant,Type,Experience Level,Framework Context,Prompt Category,Thematic Quote,
Linked Taxonomy Node(s),Research Insight`. Linked nodes are taxonomy codes separated by `;`
(a `,` is accepted on import). Import checks every row before storing any, names the line and
column of the first fault, and is one transaction.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from django.db import transaction
from django.utils.translation import gettext

from annotator.models import Project
from interviews.models import CodebookEntry, Participant
from lib import csvsafe, inputlimits
from taxonomy.loader import ROMAN
from taxonomy.models import TaxonomyNode

COLUMNS = [
    "Participant",
    "Type",
    "Experience Level",
    "Framework Context",
    "Prompt Category",
    "Thematic Quote",
    "Linked Taxonomy Node(s)",
    "Research Insight",
]

BEGINNER_WORDS = ("beginner", "novice", "junior", "newcomer", "<1", "< 1", "less than")
EXPERIENCED_WORDS = ("experienced", "senior", "expert", "professional", "advanced", "year")


class CodebookError(ValueError):
    """A fault of the file at `line` (and `column`, named as the file names it), in the reader's
    language (gettext when raised)."""

    def __init__(self, line: int | None, column: str | None, message: str) -> None:
        self.line, self.column = line, column
        where = ", ".join(
            part
            for part in (
                gettext("line %(line)s") % {"line": line} if line else "",
                column and f"{column!r}",
            )
            if part
        )
        super().__init__(f"{where}: {message}" if where else message)


def cells_problem(expected: int, got: int) -> str:
    return gettext("expected %(expected)s cells, got %(got)s") % {"expected": expected, "got": got}


def kind_problem(text: str) -> str:
    return gettext("%(type)s is neither User nor Developer") % {"type": repr(text)}


# The Type column as the study's files write it, whatever the reader's language (parse_kind
# reads it back; the display labels are translated).
KIND_CELLS = {Participant.Kind.USER: "User", Participant.Kind.DEVELOPER: "Developer"}


def kind_cell(kind: str) -> str:
    return KIND_CELLS[Participant.Kind(kind)]


def parse_kind(text: str) -> str | None:
    lowered = text.strip().lower()
    if "dev" in lowered:
        return Participant.Kind.DEVELOPER
    if "user" in lowered:
        return Participant.Kind.USER
    return None


def experience_group(text: str) -> str:
    """Beginner or experienced from free text ("Beginner (<1 year)", "3+ years"), else unknown."""
    lowered = text.strip().lower()
    if any(w in lowered for w in BEGINNER_WORDS):
        return Participant.Experience.BEGINNER
    if any(w in lowered for w in EXPERIENCED_WORDS):
        return Participant.Experience.EXPERIENCED
    return Participant.Experience.UNKNOWN


def split_codes(cell: str) -> list[str]:
    return [c for c in (part.strip() for part in re.split(r"[;,]", cell)) if c]


@dataclass
class Row:
    line: int
    participant: str
    kind: str
    experience_text: str
    framework: str
    prompt: str
    quote: str
    nodes: list[TaxonomyNode]
    insight: str


# Columns stored in a column of limited length: (CSV column, model, field).
LIMITED_COLUMNS = [
    ("Participant", Participant, "code"),
    ("Experience Level", Participant, "experience_text"),
    ("Framework Context", CodebookEntry, "framework_context"),
    ("Prompt Category", CodebookEntry, "prompt_category"),
]

FileError = Callable[[int | None, str | None, str], Exception]


def read_records(text: str, error: FileError) -> Iterator[tuple[int, list[str]]]:
    """The CSV's records with their numbers (the header is 1), checked cell by cell.

    A file over MAX_UPLOAD_BYTES, a record the csv module cannot read (a cell over its field
    limit, 128 KiB) and a cell holding a NUL character (which the database cannot store) raise
    `error(line, column, message)` instead of reaching the database.
    """
    too_large = inputlimits.upload_too_large(len(text.encode("utf-8", "surrogatepass")))
    if too_large:
        raise error(None, None, gettext("the file is %(size)s") % {"size": too_large})
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    header: list[str] = []
    line = 0
    while True:
        line += 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise error(
                line,
                None,
                gettext("not readable as CSV: %(problem)s")
                % {"problem": inputlimits.csv_cell_problem(exc)},
            ) from None
        too_long = inputlimits.csv_cell_problem(cells=cells)
        if too_long:
            raise error(
                line, None, gettext("not readable as CSV: %(problem)s") % {"problem": too_long}
            )
        header = header or [c.strip() for c in cells]
        for i, cell in enumerate(cells):
            if inputlimits.NUL in cell:
                column = header[i] if i < len(header) and line > 1 else None
                raise error(
                    line,
                    column,
                    gettext("contains a NUL character (\\x00), which cannot be stored"),
                )
        yield line, cells


def check_lengths(line: int, values: dict[str, str], error: FileError) -> None:
    """Each value of a LIMITED_COLUMNS column must fit the model field it is stored in."""
    for column, model, field in LIMITED_COLUMNS:
        if column in values:
            problem = inputlimits.length_error(model, field, values[column])
            if problem:
                raise error(line, column, problem)


def parse_csv(project: Project, text: str) -> list[Row]:
    records = read_records(text, CodebookError)
    _, header = next(records, (1, None))
    if header is None:
        raise CodebookError(1, None, gettext("the file is empty"))
    header = [h.strip() for h in header]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise CodebookError(1, missing[0], gettext("missing column"))
    col = {name: header.index(name) for name in COLUMNS}
    nodes = {n.code: n for n in project.taxonomy_version.nodes.all()}
    rows: list[Row] = []
    seen: dict[str, tuple[str, str, int]] = {}
    for line, cells in records:
        if not any(c.strip() for c in cells):
            continue
        if len(cells) < len(header):
            raise CodebookError(line, None, cells_problem(len(header), len(cells)))

        def cell(name: str, cells: list[str] = cells) -> str:
            return cells[col[name]].strip()

        check_lengths(line, {name: cell(name) for name in COLUMNS}, CodebookError)
        code = cell("Participant")
        if not code:
            raise CodebookError(line, "Participant", gettext("empty participant code"))
        kind = parse_kind(cell("Type"))
        if kind is None:
            raise CodebookError(line, "Type", kind_problem(cell("Type")))
        experience = cell("Experience Level")
        if code in seen and seen[code][:2] != (kind, experience):
            raise CodebookError(
                line,
                "Type" if seen[code][0] != kind else "Experience Level",
                gettext("participant %(code)s was described differently on line %(line)s")
                % {"code": code, "line": seen[code][2]},
            )
        seen.setdefault(code, (kind, experience, line))
        if not cell("Thematic Quote"):
            raise CodebookError(line, "Thematic Quote", gettext("empty quote"))
        linked = []
        for c in split_codes(cell("Linked Taxonomy Node(s)")):
            if c not in nodes:
                raise CodebookError(
                    line,
                    "Linked Taxonomy Node(s)",
                    gettext("no node %(code)s in %(version)s")
                    % {"code": repr(c), "version": project.taxonomy_version},
                )
            linked.append(nodes[c])
        rows.append(
            Row(
                line,
                code,
                kind,
                experience,
                cell("Framework Context"),
                cell("Prompt Category"),
                cell("Thematic Quote"),
                linked,
                cell("Research Insight"),
            )
        )
    return rows


def import_csv(project: Project, text: str, *, replace: bool = False) -> int:
    """Add (or, with `replace`, replace) the project's codebook entries; return how many."""
    rows = parse_csv(project, text)
    with transaction.atomic():
        if replace:
            CodebookEntry.objects.filter(project=project).delete()
        start = CodebookEntry.objects.filter(project=project).order_by("-position").first()
        position = start.position + 1 if start else 0
        participants = {p.code: p for p in Participant.objects.filter(project=project)}
        for row in rows:
            participant = participants.get(row.participant)
            if participant is None:
                participant = Participant.objects.create(
                    project=project,
                    code=row.participant,
                    kind=row.kind,
                    experience_text=row.experience_text,
                    experience=experience_group(row.experience_text),
                )
                participants[row.participant] = participant
            elif participant.kind != row.kind:
                raise CodebookError(
                    row.line,
                    "Type",
                    gettext("participant %(code)s is a %(type)s")
                    % {"code": row.participant, "type": participant.get_kind_display()},
                )
            entry = CodebookEntry.objects.create(
                project=project,
                participant=participant,
                framework_context=row.framework,
                prompt_category=row.prompt,
                quote=row.quote,
                insight=row.insight,
                position=position,
            )
            entry.nodes.set(row.nodes)
            position += 1
    return len(rows)


def _code_key(code: str) -> list:
    """A.2 before A.10, C.1.iv before C.1.v."""
    return [
        (0, int(p)) if p.isdigit() else (0, ROMAN.index(p) + 1) if p in ROMAN else (1, p)
        for p in code.split(".")
    ]


def export_csv(project: Project) -> str:
    """The codebook as CSV; every cell spreadsheet-safe (`lib.csvsafe`: a quote or insight
    starting with =, +, -, @ is shown as text, not run as a formula)."""
    out = io.StringIO()
    writer = csvsafe.writer(out)
    writer.writerow(COLUMNS)
    entries = (
        CodebookEntry.objects.filter(project=project)
        .select_related("participant")
        .prefetch_related("nodes")
    )
    for e in entries:
        codes = sorted((n.code for n in e.nodes.all()), key=_code_key)
        writer.writerow(
            [
                e.participant.code,
                kind_cell(e.participant.kind),
                e.participant.experience_text,
                e.framework_context,
                e.prompt_category,
                e.quote,
                "; ".join(codes),
                e.insight,
            ]
        )
    return out.getvalue()
