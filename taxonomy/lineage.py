"""Map nodes between versions of a taxonomy by following lineage edges forward or backward.

Versions form a tree (`TaxonomyVersion.parent`). To go from version S to version T we walk back
from S to the common ancestor and then forward to T, one step per version. Each step maps a node
to its counterparts; the first counterpart is the primary one:

* forward (old → new): the node itself before any node split off it;
* backward (new → old): the node that survived a merge before the nodes merged into it.

Versions with no common ancestor (e.g. one imported from a file) are matched by code.
A label made under one version is never rewritten: it is *read* under another version.
"""

from __future__ import annotations

from dataclasses import dataclass

from taxonomy.models import NodeLineage, TaxonomyNode, TaxonomyVersion

Relation = dict[int, list[int]]


def ancestors(version: TaxonomyVersion) -> list[TaxonomyVersion]:
    chain = [version]
    while chain[-1].parent_id is not None:
        chain.append(TaxonomyVersion.objects.get(pk=chain[-1].parent_id))
    return chain


def _path(
    source: TaxonomyVersion, target: TaxonomyVersion
) -> tuple[list[TaxonomyVersion], list[TaxonomyVersion]] | None:
    """(versions walked backward from source, versions walked forward to target), or None."""
    up = ancestors(source)
    down = ancestors(target)
    down_ids = [v.pk for v in down]
    for i, v in enumerate(up):
        if v.pk in down_ids:
            j = down_ids.index(v.pk)
            return up[: i + 1], list(reversed(down[: j + 1]))
    return None


def _forward_step(child: TaxonomyVersion) -> Relation:
    step: Relation = {}
    # Non-split edges first, so the primary successor comes first.
    edges = NodeLineage.objects.filter(version=child).values_list("old_node", "new_node", "kind")
    for old, new, _kind in sorted(edges, key=lambda e: e[2] == NodeLineage.Kind.SPLIT):
        step.setdefault(old, []).append(new)
    return step


def _backward_step(child: TaxonomyVersion) -> Relation:
    step: Relation = {}
    edges = NodeLineage.objects.filter(version=child).values_list("old_node", "new_node", "kind")
    for old, new, _kind in sorted(edges, key=lambda e: e[2] == NodeLineage.Kind.MERGE):
        step.setdefault(new, []).append(old)
    return step


def _compose(first: Relation, second: Relation) -> Relation:
    out: Relation = {}
    for src, mids in first.items():
        targets: list[int] = []
        for mid in mids:
            for t in second.get(mid, []):
                if t not in targets:
                    targets.append(t)
        out[src] = targets
    return out


def _by_code(source: TaxonomyVersion, target: TaxonomyVersion) -> Relation:
    codes = dict(target.nodes.values_list("code", "pk"))
    return {
        pk: ([codes[code]] if code in codes else [])
        for pk, code in source.nodes.values_list("pk", "code")
    }


def version_relation(source: TaxonomyVersion, target: TaxonomyVersion) -> Relation:
    """Every node of `source` (by pk) → its counterparts in `target`, primary first.

    One query per version step; an empty list means the node has no counterpart.
    """
    identity = {pk: [pk] for pk in source.nodes.values_list("pk", flat=True)}
    if source.pk == target.pk:
        return identity
    path = _path(source, target)
    if path is None:
        return _by_code(source, target)
    up, down = path
    relation = identity
    for child in up[:-1]:
        relation = _compose(relation, _backward_step(child))
    for child in down[1:]:
        relation = _compose(relation, _forward_step(child))
    return relation


def node_in_version(
    node: TaxonomyNode | None, version: TaxonomyVersion, *, fallback_to_parent: bool = False
) -> TaxonomyNode | None:
    """The primary counterpart of `node` in `version`, or None when it has none.

    With `fallback_to_parent`, a node that did not exist in `version` (say a sub-theme added
    later) is read as its nearest ancestor that did.
    """
    while node is not None:
        if node.version_id == version.pk:
            return node
        targets = version_relation(node.version, version).get(node.pk, [])
        if targets:
            return TaxonomyNode.objects.get(pk=targets[0])
        if not fallback_to_parent:
            return None
        node = node.parent
    return None


@dataclass(frozen=True)
class LabelInVersion:
    issue_type: TaxonomyNode | None
    theme: TaxonomyNode | None
    sub_theme: TaxonomyNode | None

    @property
    def code(self) -> str:
        node = self.sub_theme or self.theme or self.issue_type
        return node.code if node else ""


class Translator:
    """Reads many labels under one target version with one relation per source version."""

    def __init__(self, version: TaxonomyVersion) -> None:
        self.version = version
        self._relations: dict[int, Relation] = {}
        self._nodes: dict[int, TaxonomyNode] = {n.pk: n for n in version.nodes.all()}

    def node(self, node: TaxonomyNode | None) -> TaxonomyNode | None:
        if node is None:
            return None
        if node.version_id == self.version.pk:
            return self._nodes.get(node.pk, node)
        if node.version_id not in self._relations:
            self._relations[node.version_id] = version_relation(node.version, self.version)
        targets = self._relations[node.version_id].get(node.pk, [])
        return self._nodes[targets[0]] if targets else None

    def label(self, label) -> LabelInVersion:
        """An Annotation's or Resolution's label read under the target version.

        The type and theme are taken from the most specific node's counterpart when it exists,
        so a sub-theme moved to another theme reads under its new theme.
        """
        sub = self.node(label.sub_theme)
        theme = self.node(label.theme)
        issue_type = self.node(label.issue_type)
        if sub is not None:
            theme = self._nodes.get(sub.parent_id, theme)
        if theme is not None:
            issue_type = self._nodes.get(theme.parent_id, issue_type)
        return LabelInVersion(issue_type, theme, sub)

    def code(self, label, level: str = "theme") -> str:
        """The label's code at `level` ("issue_type", "theme", "sub_theme") under the target
        version; "FP" for a false positive and "" when the label has no node at that level.

        This is what an agreement computation compares: e.g. theme codes, as in the study.
        """
        if label.is_false_positive:
            return "FP"
        node = getattr(self.label(label), level)
        return node.code if node is not None else ""


def label_in_version(label, version: TaxonomyVersion) -> LabelInVersion:
    """Read one annotation's or resolution's label under `version`."""
    return Translator(version).label(label)
