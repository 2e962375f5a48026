"""Detail mapping (section III.C): annotators' summaries grouped under their sub-theme.

Each current annotation with a summary becomes one `DetailEntry` under the annotation's most
specific node. A lead reviews the lists: moves an entry to another sub-theme, or merges
duplicates into one entry. Annotation rows are never edited; the review lives in DetailEntry.
The reviewed lists (`detail_lists`) feed the taxonomy detail export, which writes a version's
details back in the study's file shape (`taxonomy.detail_files.write_detail_csv`).
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from annotator.models import Project
from labeling.models import Annotation, DetailEntry
from taxonomy.detail_files import DetailError, write_detail_csv
from taxonomy.lineage import Translator
from taxonomy.models import TaxonomyNode, TaxonomyVersion


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


def move_entry(entry: DetailEntry, node: TaxonomyNode, user: User) -> DetailEntry:
    if node.level != TaxonomyNode.Level.SUB_THEME:
        raise DetailError("node: " + gettext("%(code)s is not a sub-theme") % {"code": node.code})
    if node.version_id != entry.project.taxonomy_version_id:
        raise DetailError("node: " + gettext("not in the project's current taxonomy version"))
    entry.node = node
    entry.reviewed_by, entry.reviewed_at = user, timezone.now()
    entry.save(update_fields=["node", "reviewed_by", "reviewed_at"])
    return entry


def merge_entries(
    keep: DetailEntry, duplicates: list[DetailEntry], user: User, text: str = ""
) -> DetailEntry:
    """Mark `duplicates` as the same detail as `keep` (optionally rewording it)."""
    with transaction.atomic():
        for dup in duplicates:
            if dup.pk == keep.pk or dup.project_id != keep.project_id:
                raise DetailError(
                    "duplicates: " + gettext("pick other entries of the same project")
                )
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
