"""A node's description in the reader's language, where the taxonomy has one.

Names and descriptions are data and stay as the project wrote them. A taxonomy may carry, beside
its English description, the same text in other languages (`TaxonomyNode.descriptions`, keyed
by Django language code); the study's taxonomy ships Simplified Chinese ones
(`taxonomy/data/study/descriptions.zh-Hans.csv`, read by `taxonomy.loader`). Whether a reader sees
them is the project's choice; the pages and the API ask `description_for`, with no language when
the project keeps descriptions as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Language code (as Django's `get_language()` names it) → the file beside the study's CSVs.
DESCRIPTION_FILES = {"zh-hans": "descriptions.zh-Hans.csv"}


def _field(node: Any, name: str, default: Any) -> Any:
    # A model instance, or a row of it as a dict (the labeling page's cached payload).
    if isinstance(node, Mapping):
        return node.get(name, default)
    return getattr(node, name, default)


def description_for(node: Any, language: str | None) -> str:
    """The description a reader of `language` sees: the node's text in that language when it
    has one, otherwise the description as written. `None`: always as written."""
    written = _field(node, "description", "") or ""
    if not language:
        return written
    translated = (_field(node, "descriptions", None) or {}).get(language.lower(), "")
    return translated or written
