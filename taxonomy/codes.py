"""How a label is written as one code: the rule every page, export and statistic shares.

A false positive is "FP" (the study's exclusion); any other label is the code of its most
specific node — the sub-theme, else the theme, else the type — and "" when it has none.
"""

from __future__ import annotations

FALSE_POSITIVE = "FP"


def label_code(is_false_positive: bool, *codes: str | None) -> str:
    """The label's code; `codes` go from the most specific level (sub-theme) to the type."""
    if is_false_positive:
        return FALSE_POSITIVE
    return next((code for code in codes if code), "")
