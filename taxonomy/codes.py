"""How a label is written as one code: the rule every page, export and statistic shares.

A false positive is "FP" (the study's exclusion); any other label is the code of its most
specific node — the sub-theme, else the theme, else the type — and "" when it has none.
"""

from __future__ import annotations

from typing import Protocol

FALSE_POSITIVE = "FP"


class _Coded(Protocol):
    code: str


def label_code(is_false_positive: bool, *nodes: _Coded | None) -> str:
    """The label's code; `nodes` go from the type to the most specific level (sub-theme)."""
    if is_false_positive:
        return FALSE_POSITIVE
    node = next((n for n in reversed(nodes) if n is not None), None)
    return node.code if node is not None else ""
