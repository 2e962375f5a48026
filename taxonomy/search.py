"""Read-side helpers for the taxonomy: the tree with detail counts, and search."""

from __future__ import annotations

from dataclasses import dataclass, field

from taxonomy.models import TaxonomyNode, TaxonomyVersion


@dataclass
class TreeNode:
    node: TaxonomyNode
    children: list[TreeNode] = field(default_factory=list)

    @property
    def detail_count(self) -> int:
        """Details under this node and all its descendants."""
        return len(self.node.details) + sum(child.detail_count for child in self.children)


def build_tree(version: TaxonomyVersion) -> list[TreeNode]:
    nodes = list(version.nodes.order_by("level", "position"))
    wrapped = {n.pk: TreeNode(n) for n in nodes}
    roots = []
    for n in nodes:
        if n.parent_id is None:
            roots.append(wrapped[n.pk])
        else:
            wrapped[n.parent_id].children.append(wrapped[n.pk])
    return roots


@dataclass
class SearchHit:
    node: TaxonomyNode
    path: list[TaxonomyNode]
    matched_details: list[str]
    name_matched: bool


def search_nodes(version: TaxonomyVersion, query: str, limit_details: int = 5) -> list[SearchHit]:
    """Nodes whose code, name, description or details contain every word of the query."""
    words = [w.lower() for w in query.split() if w]
    nodes = {n.pk: n for n in version.nodes.all()}
    hits = []
    for node in sorted(nodes.values(), key=lambda n: (n.level, n.position, n.code)):
        own = f"{node.code} {node.name} {node.description}".lower()
        details = [d for d in node.details if all(w in (own + " " + d.lower()) for w in words)]
        name_matched = all(w in own for w in words)
        if not name_matched and not details:
            continue
        path: list[TaxonomyNode] = []
        parent_id = node.parent_id
        while parent_id:
            parent = nodes[parent_id]
            path.insert(0, parent)
            parent_id = parent.parent_id
        hits.append(
            SearchHit(node, path, [] if name_matched else details[:limit_details], name_matched)
        )
    hits.sort(key=lambda h: (not h.name_matched, h.node.level, h.node.position))
    return hits
