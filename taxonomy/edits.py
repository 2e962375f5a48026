"""Edits of a taxonomy: add, rename, move, merge and split nodes.

An edit never changes a version in place. It copies the whole tree into a new version (whose
`parent` is the old one), applies the change to the copy and records a lineage edge from every
old node to its counterpart, so labels made under the old version keep their foreign keys and
can still be read under the new one (see `taxonomy.lineage`). The project-level wrappers lock
the project, refuse an edit based on a version the project no longer uses, and re-pin the project
to the new version, so the next issue is labeled with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.db import transaction
from django.utils.translation import gettext

from taxonomy.loader import ROMAN, roman
from taxonomy.models import NodeLineage, TaxonomyNode, TaxonomyVersion

Level = TaxonomyNode.Level


class EditError(ValueError):
    """An edit that cannot be applied; the message says which node or field is at fault, in the
    reader's language (gettext when raised; a field's name stays as the form names it)."""


class StaleVersionError(EditError):
    def __init__(self) -> None:
        super().__init__(
            gettext(
                "The project's taxonomy changed since this page was loaded; reload and try again."
            )
        )


class Draft:
    """A fresh copy of a version being edited, with the lineage edges still to adjust."""

    def __init__(self, old: TaxonomyVersion, new: TaxonomyVersion) -> None:
        self.old, self.new = old, new
        self.copy_of: dict[int, TaxonomyNode] = {}  # old node pk → its copy

    def copy(self, node: TaxonomyNode) -> TaxonomyNode:
        if node.version_id != self.old.pk:
            raise EditError(
                gettext("node %(code)s is not in %(version)s")
                % {"code": node.code, "version": self.old}
            )
        return self.copy_of[node.pk]

    def set_kind(self, old_nodes: Iterable[TaxonomyNode], kind: str) -> None:
        NodeLineage.objects.filter(version=self.new, old_node__in=list(old_nodes)).update(kind=kind)

    def children(self, node: TaxonomyNode) -> list[TaxonomyNode]:
        return list(node.children.order_by("position"))

    def next_code(self, parent: TaxonomyNode) -> str:
        """A free code under `parent`: one more than the highest sibling number (gaps kept)."""
        taken = set(self.new.nodes.values_list("code", flat=True))
        numbers = [0]
        for code in parent.children.values_list("code", flat=True):
            suffix = code.rsplit(".", 1)[-1]
            if parent.level == Level.TYPE and suffix.isdigit():
                numbers.append(int(suffix))
            elif parent.level == Level.THEME and suffix in ROMAN:
                numbers.append(ROMAN.index(suffix) + 1)
        n = max(numbers) + 1
        while True:
            code = f"{parent.code}.{n if parent.level == Level.TYPE else roman(n)}"
            if code not in taken:
                return code
            n += 1

    def next_position(self, parent: TaxonomyNode) -> int:
        last = parent.children.order_by("-position").first()
        return last.position + 1 if last else 0

    def reparent(self, copy: TaxonomyNode, parent: TaxonomyNode) -> None:
        """Move a copied node (and recode its subtree) under another copied parent."""
        old_code = copy.code
        copy.parent = parent
        copy.position = self.next_position(parent)
        # Free the old code first: the unique constraint holds within the version.
        copy.code = f"~{copy.pk}"
        copy.save(update_fields=["parent", "position", "code"])
        copy.code = self.next_code(parent)
        copy.save(update_fields=["code"])
        for child in self.children(copy):
            suffix = child.code[len(old_code) :] if child.code.startswith(old_code) else ""
            child.code = copy.code + suffix if suffix.startswith(".") else self.next_code(copy)
            child.save(update_fields=["code"])


def derive_version(version: TaxonomyVersion, user, note: str) -> Draft:
    """Copy every node of `version` into a new version with an unchanged-lineage edge each."""
    taxonomy = version.taxonomy
    last = taxonomy.versions.select_for_update().order_by("-number").first()
    assert last is not None  # `version` itself is one of them
    new = TaxonomyVersion.objects.create(
        taxonomy=taxonomy,
        number=last.number + 1,
        note=note,
        source=version.source,
        parent=version,
        created_by=user if getattr(user, "pk", None) else None,
        origin=TaxonomyVersion.Origin.EDITED,
    )
    draft = Draft(version, new)
    nodes = list(version.nodes.order_by("level", "position"))
    for level in Level:
        batch = [n for n in nodes if n.level == level]
        copies = TaxonomyNode.objects.bulk_create(
            [
                TaxonomyNode(
                    version=new,
                    parent=draft.copy_of[n.parent_id] if n.parent_id else None,
                    level=n.level,
                    code=n.code,
                    name=n.name,
                    description=n.description,
                    descriptions=dict(n.descriptions),
                    details=list(n.details),
                    position=n.position,
                    source_row=n.source_row,
                    detail_cells=list(n.detail_cells),
                )
                for n in batch
            ]
        )
        draft.copy_of.update({old.pk: copy for old, copy in zip(batch, copies, strict=True)})
    NodeLineage.objects.bulk_create(
        [
            NodeLineage(version=new, old_node_id=pk, new_node=copy)
            for pk, copy in draft.copy_of.items()
        ]
    )
    return draft


def _subtree(node: TaxonomyNode) -> list[TaxonomyNode]:
    out = [node]
    for child in node.children.all():
        out += _subtree(child)
    return out


# Operations on a draft. Each takes nodes of the draft's old version.


def op_add(
    draft: Draft, parent: TaxonomyNode, name: str, description: str = "", details=()
) -> TaxonomyNode:
    if parent.level == Level.SUB_THEME:
        raise EditError(
            gettext("%(code)s is a sub-theme; nodes can only be added under a type or theme")
            % {"code": parent.code}
        )
    if not name.strip():
        raise EditError("name: " + gettext("a new node needs a name"))
    parent_copy = draft.copy(parent)
    return TaxonomyNode.objects.create(
        version=draft.new,
        parent=parent_copy,
        level=parent.level + 1,
        code=draft.next_code(parent_copy),
        name=name.strip(),
        description=description.strip(),
        details=list(details),
        position=draft.next_position(parent_copy),
    )


def op_rename(
    draft: Draft, node: TaxonomyNode, name: str, description: str | None = None
) -> TaxonomyNode:
    if not name.strip():
        raise EditError("name: " + gettext("the new name is empty"))
    copy = draft.copy(node)
    renamed = copy.name != name.strip()
    copy.name = name.strip()
    redescribed = description is not None and copy.description != description.strip()
    if description is not None:
        copy.description = description.strip()
    if renamed or redescribed:
        # The other languages' texts rendered the old wording: the reader sees the new English
        # rather than a translation of what the node no longer says.
        copy.descriptions = {}
    copy.save(update_fields=["name", "description", "descriptions"])
    draft.set_kind([node], NodeLineage.Kind.RENAME if renamed else NodeLineage.Kind.EDIT)
    return copy


def op_move(draft: Draft, node: TaxonomyNode, new_parent: TaxonomyNode) -> TaxonomyNode:
    if node.level == Level.TYPE:
        raise EditError(
            gettext("%(code)s is an issue type; types cannot be moved") % {"code": node.code}
        )
    if new_parent.level != node.level - 1:
        raise EditError(
            "parent: "
            + gettext("a %(level)s goes under a %(parent_level)s, not under %(code)s")
            % {
                "level": gettext(str(node.get_level_display())),
                "parent_level": gettext(str(Level(node.level - 1).label)),
                "code": new_parent.code,
            }
        )
    if new_parent.pk == node.parent_id:
        raise EditError(
            gettext("%(code)s is already under %(parent)s")
            % {"code": node.code, "parent": new_parent.code}
        )
    copy = draft.copy(node)
    draft.reparent(copy, draft.copy(new_parent))
    draft.set_kind(_subtree(node), NodeLineage.Kind.MOVE)
    return copy


def op_merge(draft: Draft, source: TaxonomyNode, target: TaxonomyNode) -> TaxonomyNode:
    """Merge `source` into `target`: its children move under target, its details join target's."""
    if source.pk == target.pk:
        raise EditError("target: " + gettext("a node cannot be merged into itself"))
    if source.level != target.level or source.level == Level.TYPE:
        raise EditError(
            gettext("%(source)s and %(target)s must be two themes or two sub-themes to be merged")
            % {"source": source.code, "target": target.code}
        )
    source_copy, target_copy = draft.copy(source), draft.copy(target)
    moved = []
    for child in draft.children(source_copy):
        draft.reparent(child, target_copy)
        moved.append(child)
    # Target's details as they were (the study's repeats kept), then the source's new ones.
    known = set(target_copy.details)
    target_copy.details = [
        *target_copy.details,
        *dict.fromkeys(d for d in source_copy.details if d not in known),
    ]
    target_copy.save(update_fields=["details"])
    # Point the source's edge at the target, then drop its copy.
    NodeLineage.objects.filter(version=draft.new, old_node=source).update(
        new_node=target_copy, kind=NodeLineage.Kind.MERGE
    )
    source_copy.delete()
    if moved:
        NodeLineage.objects.filter(version=draft.new, new_node__in=moved).update(
            kind=NodeLineage.Kind.MOVE
        )
    return target_copy


def op_split(
    draft: Draft,
    node: TaxonomyNode,
    new_name: str,
    *,
    description: str = "",
    details: Iterable[str] = (),
    children: Iterable[TaxonomyNode] = (),
) -> TaxonomyNode:
    """Split a new sibling off `node`, taking the chosen details and children with it.

    Labels on `node` keep reading as `node` (its primary successor); the lead relabels or moves
    the ones that belong to the new node.
    """
    if node.level == Level.TYPE:
        raise EditError(
            gettext("%(code)s is an issue type; types cannot be split") % {"code": node.code}
        )
    # Details are kept as the file wrote them (" barrier…" after "e.g., "); a lead picks them
    # from a form that trims them, so they are matched trimmed.
    by_text = {d.strip(): d for d in node.details}
    unknown = [d for d in details if d.strip() not in by_text]
    if unknown:
        raise EditError(
            "details: "
            + gettext("%(detail)s is not a detail of %(code)s")
            % {"detail": repr(unknown[0]), "code": node.code}
        )
    details = [by_text[d.strip()] for d in details]
    children = list(children)
    for child in children:
        if child.parent_id != node.pk:
            raise EditError(
                "children: "
                + gettext("%(child)s is not a child of %(code)s")
                % {"child": child.code, "code": node.code}
            )
    parent = node.parent
    assert parent is not None  # a type was refused above; themes and sub-themes have parents
    copy = draft.copy(node)
    new = op_add(draft, parent, new_name, description, details)
    copy.details = [d for d in copy.details if d not in details]
    copy.save(update_fields=["details"])
    for child in children:
        draft.reparent(draft.copy(child), new)
    if children:
        draft.set_kind([sub for child in children for sub in _subtree(child)], "move")
    NodeLineage.objects.create(
        version=draft.new, old_node=node, new_node=new, kind=NodeLineage.Kind.SPLIT
    )
    return new


def edit_version(
    version: TaxonomyVersion, user, note: str, operation: Callable[[Draft], TaxonomyNode]
) -> tuple[TaxonomyVersion, TaxonomyNode]:
    """Derive a new version from `version` and apply `operation` to it, atomically."""
    with transaction.atomic():
        draft = derive_version(version, user, note)
        node = operation(draft)
        return draft.new, node


def edit_project_taxonomy(
    project, user, note: str, operation: Callable[[Draft], TaxonomyNode], *, based_on: int
) -> tuple[TaxonomyVersion, TaxonomyNode]:
    """Apply an edit to the project's pinned version and re-pin the project to the result.

    `based_on` is the pk of the version the caller saw; an edit made on a stale page is refused
    rather than applied to a tree the lead did not look at.
    """
    # The project's own model class: this app sits below the one that defines projects.
    with transaction.atomic():
        locked = type(project).objects.select_for_update().get(pk=project.pk)
        if locked.taxonomy_version_id != based_on:
            raise StaleVersionError()
        version, node = edit_version(locked.taxonomy_version, user, note, operation)
        # The new version is part of this project's history, and of no other project's.
        version.project = locked
        version.save(update_fields=["project"])
        locked.taxonomy_version = version
        locked.save(update_fields=["taxonomy_version"])
        project.taxonomy_version = version
        return version, node


# Project-level edits: what the pages, tests and other apps call.


def rename(project, user, node: TaxonomyNode, name: str, description: str | None = None):
    return edit_project_taxonomy(
        project,
        user,
        f"Renamed {node.code} “{node.name}” to “{name.strip()}”.",
        lambda d: op_rename(d, node, name, description),
        based_on=node.version_id,
    )


def move(project, user, node: TaxonomyNode, new_parent: TaxonomyNode):
    return edit_project_taxonomy(
        project,
        user,
        f"Moved {node.code} {node.name} under {new_parent.code} {new_parent.name}.",
        lambda d: op_move(d, node, new_parent),
        based_on=node.version_id,
    )


def merge(project, user, source: TaxonomyNode, target: TaxonomyNode):
    return edit_project_taxonomy(
        project,
        user,
        f"Merged {source.code} {source.name} into {target.code} {target.name}.",
        lambda d: op_merge(d, source, target),
        based_on=source.version_id,
    )


def split(project, user, node: TaxonomyNode, new_name: str, **kwargs: Any):
    return edit_project_taxonomy(
        project,
        user,
        f"Split “{new_name.strip()}” off {node.code} {node.name}.",
        lambda d: op_split(d, node, new_name, **kwargs),
        based_on=node.version_id,
    )


def add(project, user, parent: TaxonomyNode, name: str, description: str = "", note: str = ""):
    return edit_project_taxonomy(
        project,
        user,
        note or f"Added “{name.strip()}” under {parent.code} {parent.name}.",
        lambda d: op_add(d, parent, name, description),
        based_on=parent.version_id,
    )
