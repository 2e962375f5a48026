"""Detail mapping (section III.C): annotators' summaries grouped under their sub-theme.

Each current annotation with a summary becomes one `DetailEntry` under the annotation's most
specific node. A lead reviews the lists: moves an entry to another sub-theme, or merges
duplicates into one entry. Annotation rows are never edited; the review lives in DetailEntry.
The reviewed lists (`detail_lists`) feed the taxonomy detail export, which writes a version's
details back in the study's file shape (`write_detail_csv`).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from typing import TextIO

from django.db import transaction
from django.utils import timezone

from annotator.models import Annotation, Project
from lib import csvsafe
from taxonomy.lineage import Translator
from taxonomy.loader import TYPE_FILES
from taxonomy.models import DetailEntry, TaxonomyNode, TaxonomyVersion


class DetailError(ValueError):
    pass


def sync_entries(project: Project) -> int:
    """Create entries for current annotations with a summary that have none; return how many."""
    annotations = (
        Annotation.objects.filter(project=project, is_current=True, is_false_positive=False)
        .exclude(summary="")
        .filter(detail_entry__isnull=True)
        .select_related("sub_theme", "theme", "issue_type")
    )
    entries = []
    for a in annotations:
        node = a.sub_theme or a.theme or a.issue_type
        if node is not None:
            entries.append(
                DetailEntry(project=project, annotation=a, text=a.summary.strip(), node=node)
            )
    DetailEntry.objects.bulk_create(entries)
    return len(entries)


@dataclass
class Group:
    node: TaxonomyNode
    entries: list[DetailEntry] = field(default_factory=list)


def grouped(project: Project, version: TaxonomyVersion | None = None) -> list[Group]:
    """Entries (duplicates left out) under nodes of `version` (default: the project's)."""
    version = version or project.taxonomy_version
    translate = Translator(version)
    nodes = list(version.nodes.order_by("level", "position"))
    groups = {n.pk: Group(n) for n in nodes}
    entries = (
        DetailEntry.objects.filter(project=project, merged_into__isnull=True)
        .select_related("node", "node__version")
        .prefetch_related("duplicates")
        .order_by("pk")
    )
    for entry in entries:
        node = translate.node(entry.node)
        if node is None and entry.node.parent_id:
            # A node with no counterpart reads under its parent's counterpart.
            node = translate.node(entry.node.parent)
        if node is not None:
            groups[node.pk].entries.append(entry)
    # Sub-themes in tree order, then themes or types holding summaries without a sub-theme.
    order = sorted(nodes, key=lambda n: (n.code.split(".")[0], n.level != 3, n.code))
    return [groups[n.pk] for n in order if groups[n.pk].entries or n.level == 3]


def move_entry(entry: DetailEntry, node: TaxonomyNode, user) -> DetailEntry:
    if node.level != TaxonomyNode.Level.SUB_THEME:
        raise DetailError(f"node: {node.code} is not a sub-theme")
    if node.version_id != entry.project.taxonomy_version_id:
        raise DetailError("node: not in the project's current taxonomy version")
    entry.node = node
    entry.reviewed_by, entry.reviewed_at = user, timezone.now()
    entry.save(update_fields=["node", "reviewed_by", "reviewed_at"])
    return entry


def merge_entries(
    keep: DetailEntry, duplicates: list[DetailEntry], user, text: str = ""
) -> DetailEntry:
    """Mark `duplicates` as the same detail as `keep` (optionally rewording it)."""
    with transaction.atomic():
        for dup in duplicates:
            if dup.pk == keep.pk or dup.project_id != keep.project_id:
                raise DetailError("duplicates: pick other entries of the same project")
            dup.merged_into = keep
            dup.reviewed_by, dup.reviewed_at = user, timezone.now()
            dup.save(update_fields=["merged_into", "reviewed_by", "reviewed_at"])
            # Entries merged into a duplicate follow it to the kept one.
            DetailEntry.objects.filter(merged_into=dup).update(merged_into=keep)
        if text.strip():
            keep.text = text.strip()
        keep.reviewed_by, keep.reviewed_at = user, timezone.now()
        keep.save(update_fields=["text", "reviewed_by", "reviewed_at"])
    return keep


def detail_lists(project: Project, version: TaxonomyVersion | None = None) -> dict[str, list[str]]:
    """Sub-theme code → its reviewed details (duplicates merged), for the detail export."""
    return {
        g.node.code: [e.text for e in g.entries] for g in grouped(project, version) if g.entries
    }


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


def export_detail_csv(
    project: Project, type_code: str, *, with_version_details: bool = True
) -> str:
    """The project's detail file: the version in use's details, then the reviewed summaries."""
    version = project.taxonomy_version
    out = io.StringIO()
    write_detail_csv(
        out,
        version,
        type_code,
        detail_lists(project, version),
        with_version_details=with_version_details,
    )
    return out.getvalue()
