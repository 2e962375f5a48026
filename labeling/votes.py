"""The resolve page's vote table: at each level of the label (false positive, type, theme,
sub-theme), what the issue's current annotations chose and how many chose it, most votes
first, each choice by its code and name (`vote_table`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext

from labeling import resolution
from taxonomy.models import TaxonomyNode

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise


def vote_table(
    comparison: resolution.Comparison, taxonomy_version_id: int
) -> dict[StrOrPromise, list[tuple[str, int]]]:
    """{level's name: [(choice's name, votes), …]} for `comparison.votes`, in its order of
    levels (the level's name translated when shown), each level's choices by descending votes."""
    nodes = {
        n.pk: n
        for n in TaxonomyNode.objects.filter(version_id=taxonomy_version_id).only("code", "name")
    }
    return {
        resolution.LEVEL_NAMES[level]: [
            (_vote_name(level, value, nodes), count) for value, count in counter.most_common()
        ]
        for level, counter in comparison.votes.items()
    }


def _vote_name(level: str, value: Any, nodes: dict[int, TaxonomyNode]) -> str:
    if level == "false_positive":
        return gettext("not LLM-related") if value else gettext("LLM-related")
    if value is None:
        return "—"
    node = nodes.get(value)
    return f"{node.code} {node.name}" if node else str(value)
