"""The difference between two versions of a taxonomy, read through node lineage.

Nodes are matched by lineage (so a renamed or re-coded node is the same node), or by code when
the versions share no history. The result lists what was added, removed, renamed, moved,
merged, split, and whose description or details changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from taxonomy.lineage import version_relation
from taxonomy.models import TaxonomyNode, TaxonomyVersion


@dataclass
class Change:
    kind: str  # added, removed, renamed, moved, merged, split, described, details
    old: list[TaxonomyNode] = field(default_factory=list)
    new: list[TaxonomyNode] = field(default_factory=list)
    text: str = ""


@dataclass
class VersionDiff:
    old: TaxonomyVersion
    new: TaxonomyVersion
    changes: list[Change]

    def of_kind(self, kind: str) -> list[Change]:
        return [c for c in self.changes if c.kind == kind]

    @property
    def is_empty(self) -> bool:
        return not self.changes


def _label(node: TaxonomyNode) -> str:
    return f"{node.code} {node.name}"


def diff_versions(old: TaxonomyVersion, new: TaxonomyVersion) -> VersionDiff:
    old_nodes = {n.pk: n for n in old.nodes.order_by("level", "position")}
    new_nodes = {n.pk: n for n in new.nodes.order_by("level", "position")}
    forward = version_relation(old, new)
    backward = version_relation(new, old)
    changes: list[Change] = []

    preimages: dict[int, list[int]] = {}
    for pk, targets in forward.items():
        for t in targets:
            preimages.setdefault(t, []).append(pk)

    for pk, node in old_nodes.items():
        targets = forward.get(pk, [])
        if not targets:
            changes.append(Change("removed", [node], [], f"{_label(node)} was removed"))
            continue
        if len(targets) > 1:
            parts = [new_nodes[t] for t in targets]
            changes.append(
                Change(
                    "split",
                    [node],
                    parts,
                    f"{_label(node)} was split into " + ", ".join(_label(p) for p in parts),
                )
            )
        primary = new_nodes[targets[0]]
        survivor = (backward.get(primary.pk) or [pk])[0]
        if len(preimages.get(primary.pk, [])) > 1 and pk != survivor:
            # Reported once per absorbed node; the survivor is the backward-primary node.
            changes.append(
                Change(
                    "merged", [node], [primary], f"{_label(node)} was merged into {_label(primary)}"
                )
            )
            continue
        if primary.name != node.name:
            changes.append(
                Change(
                    "renamed",
                    [node],
                    [primary],
                    f"{node.code} “{node.name}” was renamed “{primary.name}”",
                )
            )
        parent_target = forward.get(node.parent_id, [None])[0] if node.parent_id else None
        if (node.parent_id and primary.parent_id != parent_target) or primary.code != node.code:
            changes.append(
                Change("moved", [node], [primary], f"{_label(node)} is now {_label(primary)}")
            )
        if primary.description != node.description:
            changes.append(
                Change("described", [node], [primary], f"description of {_label(primary)} changed")
            )
        if primary.details != node.details:
            added = len(set(primary.details) - set(node.details))
            removed = len(set(node.details) - set(primary.details))
            changes.append(
                Change(
                    "details",
                    [node],
                    [primary],
                    f"details of {_label(primary)}: {added} added, {removed} removed",
                )
            )

    for pk, node in new_nodes.items():
        if pk not in preimages:
            changes.append(Change("added", [], [node], f"{_label(node)} was added"))
    return VersionDiff(old, new, changes)
