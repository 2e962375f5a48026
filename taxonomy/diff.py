"""The difference between two versions of a taxonomy, read through node lineage.

Nodes are matched by lineage (so a renamed or re-coded node is the same node), or by code when
the versions share no history. The result lists what was added, removed, renamed, moved,
merged, split, and whose description or details changed.

Each change's `text` is English (a release's datasheet quotes it); `shown` says the same in the
reader's language for the pages, from the same message (marked with gettext_noop) and values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext, gettext_noop

from taxonomy.lineage import version_relation
from taxonomy.models import TaxonomyNode, TaxonomyVersion

# The kinds of change, as the diff page's badges name them.
KIND_LABELS = {
    "added": gettext_noop("added"),
    "removed": gettext_noop("removed"),
    "renamed": gettext_noop("renamed"),
    "moved": gettext_noop("moved"),
    "merged": gettext_noop("merged"),
    "split": gettext_noop("split"),
    "described": gettext_noop("described"),
    "details": gettext_noop("details"),
}


@dataclass
class Change:
    kind: str  # added, removed, renamed, moved, merged, split, described, details
    old: list[TaxonomyNode] = field(default_factory=list)
    new: list[TaxonomyNode] = field(default_factory=list)
    text: str = ""
    # The untranslated message of `text` and its values (`shown` translates it).
    message: str = ""
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def shown(self) -> str:
        """The change in the active language (`text` is English)."""
        return gettext(self.message) % self.values if self.message else self.text

    @property
    def kind_label(self) -> str:
        return gettext(KIND_LABELS.get(self.kind, self.kind))


def _change(
    kind: str,
    before: list[TaxonomyNode],
    after: list[TaxonomyNode],
    message: str,
    /,
    **values: Any,
) -> Change:
    return Change(kind, before, after, message % values, message, values)


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
            changes.append(
                _change(
                    "removed", [node], [], gettext_noop("%(node)s was removed"), node=_label(node)
                )
            )
            continue
        if len(targets) > 1:
            parts = [new_nodes[t] for t in targets]
            changes.append(
                _change(
                    "split",
                    [node],
                    parts,
                    gettext_noop("%(node)s was split into %(parts)s"),
                    node=_label(node),
                    parts=", ".join(_label(p) for p in parts),
                )
            )
        primary = new_nodes[targets[0]]
        survivor = (backward.get(primary.pk) or [pk])[0]
        if len(preimages.get(primary.pk, [])) > 1 and pk != survivor:
            # Reported once per absorbed node; the survivor is the backward-primary node.
            changes.append(
                _change(
                    "merged",
                    [node],
                    [primary],
                    gettext_noop("%(node)s was merged into %(target)s"),
                    node=_label(node),
                    target=_label(primary),
                )
            )
            continue
        if primary.name != node.name:
            changes.append(
                _change(
                    "renamed",
                    [node],
                    [primary],
                    gettext_noop("%(code)s “%(old)s” was renamed “%(new)s”"),
                    code=node.code,
                    old=node.name,
                    new=primary.name,
                )
            )
        parent_target = forward.get(node.parent_id, [None])[0] if node.parent_id else None
        if (node.parent_id and primary.parent_id != parent_target) or primary.code != node.code:
            changes.append(
                _change(
                    "moved",
                    [node],
                    [primary],
                    gettext_noop("%(node)s is now %(new)s"),
                    node=_label(node),
                    new=_label(primary),
                )
            )
        if primary.description != node.description:
            changes.append(
                _change(
                    "described",
                    [node],
                    [primary],
                    gettext_noop("description of %(node)s changed"),
                    node=_label(primary),
                )
            )
        if primary.details != node.details:
            added = len(set(primary.details) - set(node.details))
            removed = len(set(node.details) - set(primary.details))
            changes.append(
                _change(
                    "details",
                    [node],
                    [primary],
                    gettext_noop("details of %(node)s: %(added)s added, %(removed)s removed"),
                    node=_label(primary),
                    added=added,
                    removed=removed,
                )
            )

    for pk, node in new_nodes.items():
        if pk not in preimages:
            changes.append(
                _change("added", [], [node], gettext_noop("%(node)s was added"), node=_label(node))
            )
    return VersionDiff(old, new, changes)
