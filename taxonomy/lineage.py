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

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from taxonomy.codes import label_code
from taxonomy.models import NodeLineage, TaxonomyNode, TaxonomyVersion


class StoredLabel(Protocol):
    """A label as an Annotation or a Resolution holds it (labeling's models, which this app
    cannot import)."""

    @property
    def is_false_positive(self) -> bool: ...
    @property
    def issue_type(self) -> TaxonomyNode | None: ...
    @property
    def theme(self) -> TaxonomyNode | None: ...
    @property
    def sub_theme(self) -> TaxonomyNode | None: ...


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
    """A label read under a target version.

    `original` is the label's own most specific node (in the version it was made under); when
    that node has no counterpart in the target version the label is `unmapped`.
    """

    issue_type: TaxonomyNode | None
    theme: TaxonomyNode | None
    sub_theme: TaxonomyNode | None
    is_false_positive: bool = False
    original: TaxonomyNode | None = None

    @property
    def code(self) -> str:
        """The study's rule for one label cell: "FP" for a false positive, else the most
        specific code (sub-theme, theme, type), else ""."""
        return label_code(self.is_false_positive, self.issue_type, self.theme, self.sub_theme)

    @property
    def unmapped(self) -> bool:
        """True when the label's most specific node has no counterpart in the target version."""
        if self.is_false_positive or self.original is None:
            return False
        target = {1: self.issue_type, 2: self.theme, 3: self.sub_theme}.get(self.original.level)
        return target is None

    @property
    def original_code(self) -> str:
        """The code the label was made with, in its own version ("FP" for a false positive)."""
        if self.is_false_positive:
            return "FP"
        return self.original.code if self.original is not None else ""


class Translator:
    """Reads many labels under one target version with one relation per source version."""

    def __init__(self, version: TaxonomyVersion) -> None:
        self.version = version
        self._relations: dict[int, Relation] = {}
        self._nodes: dict[int, TaxonomyNode] = {n.pk: n for n in version.nodes.all()}
        # Nodes of any version fetched by `load`, for `label_from_ids`.
        self._loaded: dict[int, TaxonomyNode] = dict(self._nodes)
        self._by_ids: dict[tuple, LabelInVersion] = {}

    def node(self, node: TaxonomyNode | None) -> TaxonomyNode | None:
        if node is None:
            return None
        if node.version_id == self.version.pk:
            return self._nodes.get(node.pk, node)
        if node.version_id not in self._relations:
            self._relations[node.version_id] = version_relation(node.version, self.version)
        targets = self._relations[node.version_id].get(node.pk, [])
        return self._nodes[targets[0]] if targets else None

    def label(self, label: StoredLabel) -> LabelInVersion:
        """An Annotation's or Resolution's label read under the target version.

        The type and theme are taken from the most specific node's counterpart when it exists,
        so a sub-theme moved to another theme reads under its new theme.
        """
        return self._read(
            bool(label.is_false_positive), label.issue_type, label.theme, label.sub_theme
        )

    def _read(
        self,
        is_false_positive: bool,
        issue_type: TaxonomyNode | None,
        theme: TaxonomyNode | None,
        sub_theme: TaxonomyNode | None,
    ) -> LabelInVersion:
        sub = self.node(sub_theme)
        mapped_theme = self.node(theme)
        mapped_type = self.node(issue_type)
        if sub is not None and sub.parent_id is not None:
            mapped_theme = self._nodes.get(sub.parent_id, mapped_theme)
        if mapped_theme is not None and mapped_theme.parent_id is not None:
            mapped_type = self._nodes.get(mapped_theme.parent_id, mapped_type)
        original = sub_theme or theme or issue_type
        return LabelInVersion(mapped_type, mapped_theme, sub, is_false_positive, original)

    def load(self, node_ids: Iterable[int | None]) -> None:
        """Fetch the nodes (of any version) that labels point at, in one query, so that
        `label_from_ids` reads thousands of labels without a query per label."""
        missing = {pk for pk in node_ids if pk and pk not in self._loaded}
        if missing:
            for node in TaxonomyNode.objects.filter(pk__in=missing).select_related("version"):
                self._loaded[node.pk] = node

    def label_from_ids(
        self, is_false_positive: bool, type_id: int | None, theme_id: int | None, sub_id: int | None
    ) -> LabelInVersion:
        """The label stored as these node ids, read under the target version (memoised: a
        project holds few distinct labels however many annotations it has)."""
        key = (bool(is_false_positive), type_id, theme_id, sub_id)
        if key not in self._by_ids:
            self.load(key[1:])
            nodes = [self._loaded.get(pk) if pk else None for pk in key[1:]]
            self._by_ids[key] = self._read(key[0], *nodes)
        return self._by_ids[key]

    def code(self, label: StoredLabel, level: str = "theme") -> str:
        """The label's code at `level` ("issue_type", "theme", "sub_theme") under the target
        version; "FP" for a false positive and "" when the label has no node at that level.

        This is what an agreement computation compares: e.g. theme codes, as in the study.
        """
        return label_code(label.is_false_positive, getattr(self.label(label), level))


def label_in_version(label: StoredLabel, version: TaxonomyVersion) -> LabelInVersion:
    """Read one annotation's or resolution's label under `version`."""
    return Translator(version).label(label)
