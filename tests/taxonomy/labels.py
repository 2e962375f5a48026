"""Helpers that write labels the way the labeling page stores them (nodes of a version)."""

from __future__ import annotations

from labeling.models import Annotation
from taxonomy.models import TaxonomyVersion


def nodes_for(version: TaxonomyVersion, code: str) -> dict:
    """issue_type/theme/sub_theme for the most specific `code` in `version`."""
    node = version.nodes.get(code=code)
    chain = [node]
    while chain[0].parent_id:
        chain.insert(0, chain[0].parent)
    return dict(zip(["issue_type", "theme", "sub_theme"], chain, strict=False))


def annotate(project, issue, user, code: str, **fields) -> Annotation:
    return Annotation.objects.create(
        project=project,
        issue=issue,
        annotator=user,
        **nodes_for(project.taxonomy_version, code),
        **fields,
    )
