"""Read the study's taxonomy detail CSVs into a three-level tree and store it as a version.

The study published one file per issue type with the columns `rootcause,subcategory,symptoms`:
one row per sub-theme, rows of a theme contiguous, the third cell a list of details.

The separator rule (the one that gives the paper's counts: 297 question intents, 1,586 bug
symptoms): every ASCII comma separates two details, and nothing else does. The Chinese comma
`、` stays inside a detail. A detail's text is kept exactly as written, a space after the comma
included (the study wrote "e.g., barrier" in a few places, which the paper counts as two
details, " barrier…" the second), so that `taxonomy.detail_files` writes the file back as it was.
Blank items are not details.

A row with more cells than the header, when `symptoms` is the last column, is a details cell
whose quoting broke (the requirement file's line 4 has unescaped quotes, so a CSV reader ends
the cell early): every cell from the third on holds details. The node remembers how many
details each cell held (`detail_cells`) and its row in the file (`source_row`), since the paper
numbers some sub-themes in another order than the file's rows; both serve the write-back only.

Beside the three files, `descriptions.<language>.csv` (`taxonomy.texts.DESCRIPTION_FILES`)
holds each node's description in another language, with the columns `code,name,description`:
the node's code, its English name as the study wrote it (so a file that no longer matches the
tree is refused rather than misattributed), and the text. A node the file leaves out keeps only
its English; a code the tree lacks, a name that differs, an empty text or a repeated code is an
error naming the line.

Parsing is pure and names file and line on any error; storing is one transaction, so a bad file
loads nothing.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from taxonomy.models import Taxonomy, TaxonomyNode, TaxonomyVersion
from taxonomy.texts import DESCRIPTION_FILES

# The study's three files, in the order of the paper's types.
TYPE_FILES = [
    ("A", "Question", "question_intents.csv"),
    ("B", "Requirement", "requirement_expections.csv"),
    ("C", "Bug", "bug_symptoms.csv"),
]
REQUIRED_COLUMNS = ("rootcause", "subcategory", "symptoms")
DESCRIPTION_COLUMNS = ("code", "name", "description")
DEFAULT_DIR = Path(__file__).resolve().parent / "data" / "study"

# Where the paper numbers sub-themes differently from the CSV's row order.
PAPER_SUB_THEME_ORDER: dict[str, list[str]] = {
    "B.2": [
        "API and Interface",
        "Distributed Support",
        "Performance and Resource Optimization",
        "Data Support",
        "Model Expansion",
        "Training Workflow",
        "Quantization and Inference Support",
    ],
    "B.4": ["Documentation and Tutorial Support", "Collaboration Workflows"],
}

ROMAN = [
    "i",
    "ii",
    "iii",
    "iv",
    "v",
    "vi",
    "vii",
    "viii",
    "ix",
    "x",
    "xi",
    "xii",
    "xiii",
    "xiv",
    "xv",
    "xvi",
    "xvii",
    "xviii",
    "xix",
    "xx",
]


class TaxonomyFileError(ValueError):
    """A taxonomy file that cannot be loaded; the message names the file and line."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path, self.line = path, line
        where = f"{path}, line {line}" if line else path
        super().__init__(f"{where}: {message}")


@dataclass
class NodeSpec:
    code: str
    name: str
    level: int
    description: str = ""
    details: list[str] = field(default_factory=list)
    children: list[NodeSpec] = field(default_factory=list)
    source_row: int | None = None
    detail_cells: list[int] = field(default_factory=list)
    # Language code → the description in that language (`taxonomy.texts`).
    descriptions: dict[str, str] = field(default_factory=dict)

    def walk(self) -> Iterator[NodeSpec]:
        yield self
        for child in self.children:
            yield from child.walk()


def split_details(cell: str) -> list[str]:
    """Split on every ASCII comma (the Chinese comma `、` stays inside an item); text kept."""
    return [item for item in cell.split(",") if item.strip()]


def split_detail_cells(cells: list[str]) -> tuple[list[str], list[int]]:
    """The details of a row's detail cells, and how many each cell held if more than one."""
    per_cell = [split_details(cell) for cell in cells]
    details = [item for items in per_cell for item in items]
    return details, ([len(items) for items in per_cell] if len(cells) > 1 else [])


def count_details(types: list[NodeSpec]) -> dict[str, int]:
    """Type code → how many details its sub-themes hold (repeats counted, as the paper does)."""
    return {t.code: sum(len(n.details) for n in t.walk()) for t in types}


def roman(n: int) -> str:
    return ROMAN[n - 1] if n <= len(ROMAN) else str(n)


def _paper_rank(theme_code: str, sub_name: str) -> int | None:
    order = PAPER_SUB_THEME_ORDER.get(theme_code)
    if not order:
        return None
    for rank, prefix in enumerate(order):
        if sub_name.lower().startswith(prefix.lower()):
            return rank
    return None


def _header(
    reader: Iterator[list[str]], path: str, columns: tuple[str, ...]
) -> tuple[list[str], dict[str, int]]:
    """The file's header (read from `reader`) and each required column's index; an empty file
    or a missing column is an error on line 1."""
    try:
        header = [h.strip().lower() for h in next(reader)]
    except StopIteration:
        raise TaxonomyFileError(path, 1, "the file is empty") from None
    missing = [c for c in columns if c not in header]
    if missing:
        raise TaxonomyFileError(path, 1, f"missing column(s): {', '.join(missing)}")
    return header, {name: header.index(name) for name in columns}


def parse_type_file(text: str, path: str, type_code: str, type_name: str) -> NodeSpec:
    """Parse one CSV's text into a type node with its themes and sub-themes."""
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    header, col = _header(reader, path, REQUIRED_COLUMNS)

    type_node = NodeSpec(type_code, type_name, TaxonomyNode.Level.TYPE)
    themes: dict[str, NodeSpec] = {}
    rows: dict[str, list[tuple[int, str, list[str], list[int], int]]] = {}
    current: str | None = None
    # Spilled cells are details only when the details column is the last one.
    spill = col["symptoms"] == len(header) - 1
    line_no = reader.line_num + 1  # the line the next record starts on
    for record_no, row in enumerate(reader, start=2):
        start, line_no = line_no, reader.line_num + 1
        if not any(cell.strip() for cell in row):
            continue
        if len(row) < len(header) or (len(row) > len(header) and not spill):
            raise TaxonomyFileError(path, start, f"expected {len(header)} cells, got {len(row)}")
        theme_name = row[col["rootcause"]].strip()
        sub_name = row[col["subcategory"]].strip()
        if not theme_name:
            raise TaxonomyFileError(path, start, "empty theme name (rootcause)")
        if not sub_name:
            raise TaxonomyFileError(path, start, "empty sub-theme name (subcategory)")
        if theme_name != current:
            if theme_name in themes:
                raise TaxonomyFileError(
                    path,
                    start,
                    f"rows of theme {theme_name!r} are not contiguous (it appeared earlier)",
                )
            code = f"{type_code}.{len(themes) + 1}"
            themes[theme_name] = NodeSpec(code, theme_name, TaxonomyNode.Level.THEME)
            rows[theme_name] = []
            current = theme_name
        details, cells = split_detail_cells(
            row[col["symptoms"] :] if spill else [row[col["symptoms"]]]
        )
        rows[theme_name].append((start, sub_name, details, cells, record_no))

    if not themes:
        raise TaxonomyFileError(path, None, "no rows after the header")
    for theme_name, theme in themes.items():
        entries = rows[theme_name]
        ranked = [(_paper_rank(theme.code, e[1]), i) for i, e in enumerate(entries)]
        if all(rank is not None for rank, _ in ranked):
            entries = [entries[i] for _, i in sorted(ranked)]
        seen: set[str] = set()
        for n, (start, sub_name, details, cells, record_no) in enumerate(entries, start=1):
            if sub_name in seen:
                raise TaxonomyFileError(path, start, f"sub-theme {sub_name!r} appears twice")
            seen.add(sub_name)
            theme.children.append(
                NodeSpec(
                    f"{theme.code}.{roman(n)}",
                    sub_name,
                    TaxonomyNode.Level.SUB_THEME,
                    details=details,
                    source_row=record_no,
                    detail_cells=cells,
                )
            )
        type_node.children.append(theme)
    return type_node


def parse_study_dir(directory: Path) -> list[NodeSpec]:
    """Parse the study's three files in `directory`; raise TaxonomyFileError on the first fault."""
    types = []
    for code, name, filename in TYPE_FILES:
        path = directory / filename
        if not path.exists():
            raise TaxonomyFileError(str(path), None, "file not found")
        types.append(parse_type_file(_read(path), str(path), code, name))
    for language, filename in DESCRIPTION_FILES.items():
        path = directory / filename
        if path.exists():  # optional: without it the nodes keep their English only
            parse_description_file(_read(path), str(path), language, types)
    return types


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TaxonomyFileError(str(path), None, f"not UTF-8 ({exc})") from None


def parse_description_file(text: str, path: str, language: str, types: list[NodeSpec]) -> None:
    """Read a `code,name,description` file into the parsed tree's `descriptions[language]`.

    Every fault names its line: a node the tree lacks, an English name other than the node's
    (the file was written for another tree), an empty text, a code given twice.
    """
    nodes = {node.code: node for t in types for node in t.walk()}
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    header, col = _header(reader, path, DESCRIPTION_COLUMNS)
    found: dict[str, int] = {}
    line_no = reader.line_num + 1  # the line the next record starts on
    for row in reader:
        start, line_no = line_no, reader.line_num + 1
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise TaxonomyFileError(path, start, f"expected {len(header)} cells, got {len(row)}")
        code, name, description = (row[col[c]].strip() for c in DESCRIPTION_COLUMNS)
        node = nodes.get(code)
        if node is None:
            raise TaxonomyFileError(path, start, f"no node {code!r} in the taxonomy")
        if name != node.name:
            raise TaxonomyFileError(
                path, start, f"{code} is named {node.name!r} in the taxonomy, not {name!r}"
            )
        if not description:
            raise TaxonomyFileError(path, start, f"empty description for {code}")
        if "\x00" in description:
            raise TaxonomyFileError(path, start, "contains a NUL character, which cannot be stored")
        if code in found:
            raise TaxonomyFileError(
                path, start, f"{code} appears twice (first on line {found[code]})"
            )
        found[code] = start
        node.descriptions[language] = description


@transaction.atomic
def store_version(
    types: list[NodeSpec],
    taxonomy_name: str,
    source: str = "",
    note: str = "",
    parent: TaxonomyVersion | None = None,
    *,
    origin: str = TaxonomyVersion.Origin.IMPORTED,
    project=None,
    created_by=None,
) -> TaxonomyVersion:
    """Store a parsed tree as the next version of the named taxonomy.

    `project` is the project whose history the version joins (None: the loader's or an
    administrator's command); see `labeling.taxonomy_history`.
    """
    taxonomy, _ = Taxonomy.objects.get_or_create(name=taxonomy_name)
    last = taxonomy.versions.select_for_update().order_by("-number").first()
    version = TaxonomyVersion.objects.create(
        taxonomy=taxonomy,
        number=(last.number + 1) if last else 1,
        source=source,
        note=note,
        parent=parent,
        origin=origin,
        project=project,
        created_by=created_by if getattr(created_by, "pk", None) else None,
    )

    def create(spec: NodeSpec, parent_node: TaxonomyNode | None, position: int) -> None:
        node = TaxonomyNode.objects.create(
            version=version,
            parent=parent_node,
            level=spec.level,
            code=spec.code,
            name=spec.name,
            description=spec.description,
            descriptions=spec.descriptions,
            details=spec.details,
            position=position,
            source_row=spec.source_row,
            detail_cells=spec.detail_cells,
        )
        for i, child in enumerate(spec.children):
            create(child, node, i)

    for i, spec in enumerate(types):
        create(spec, None, i)
    return version


STUDY_TAXONOMY_NAME = "LLM-centric challenges in DL frameworks"


def load_study_taxonomy(
    directory: Path = DEFAULT_DIR, name: str = STUDY_TAXONOMY_NAME, only_if_missing: bool = False
) -> TaxonomyVersion:
    """Load the study's CSVs as a new version (or return the latest one if asked and present)."""
    if only_if_missing:
        # The loaded one, not whatever a project's edit made last under the same name.
        existing = (
            TaxonomyVersion.objects.filter(taxonomy__name=name, origin=TaxonomyVersion.Origin.STUDY)
            .order_by("-number")
            .first()
        )
        if existing:
            return existing
    types = parse_study_dir(Path(directory))
    return store_version(
        types,
        name,
        source=str(directory),
        note="Loaded from the study's taxonomy detail CSVs.",
        origin=TaxonomyVersion.Origin.STUDY,
    )
