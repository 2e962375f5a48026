"""One label value: what an annotation or a final label says, built, compared and stored alike.

`Label` is the form's, the API's and the lead's label before it is stored; `Label.fields()`
are the model fields every `Annotation` and `Resolution` is written with, and `label_key` is
what the comparison of K labels counts.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Protocol


class StoredLabel(Protocol):
    """An Annotation, a Resolution or a `Label`: what `label_key` reads."""

    @property
    def is_false_positive(self) -> bool: ...


# The taxonomy nodes a label points at, type to sub-theme (what `label_key` compares unless
# the label is a false positive), and with the false-positive flag, the fields of that key.
NODE_FIELDS = ("issue_type_id", "theme_id", "sub_theme_id")
KEY_FIELDS = ("is_false_positive", *NODE_FIELDS)
# The label proper (what is compared and becomes a final label) and the annotator's notes.
LABEL_FIELDS = ("is_false_positive", "false_positive_reason", *NODE_FIELDS)
NOTE_FIELDS = ("summary", "note", "proposed_category")

# A label as compared: FP for a false positive, else (type, theme, sub-theme) node ids.
LabelKey = tuple
# The key of a false positive (an exclusion), at every level of comparison.
FP: tuple[str] = ("FP",)


@dataclass
class Label:
    is_false_positive: bool = False
    false_positive_reason: str = ""
    issue_type_id: int | None = None
    theme_id: int | None = None
    sub_theme_id: int | None = None
    summary: str = ""
    note: str = ""
    proposed_category: str = ""

    @classmethod
    def from_annotation(cls, row: object, with_notes: bool = True) -> Label:
        """The label an Annotation (or a Resolution, without notes) holds."""
        names = LABEL_FIELDS + (NOTE_FIELDS if with_notes else ())
        return cls(**{name: getattr(row, name) for name in names})

    def fields(self) -> dict:
        """The label proper as model fields (for a new Annotation or Resolution)."""
        return {name: getattr(self, name) for name in LABEL_FIELDS}

    def notes(self) -> dict:
        return {name: getattr(self, name) for name in NOTE_FIELDS}

    def same_as(self, row: object) -> bool:
        """True if the stored annotation says exactly this, notes included."""
        return all(getattr(self, f.name) == getattr(row, f.name) for f in fields(self))


def label_key(row: StoredLabel) -> LabelKey:
    """What the comparison counts for an annotation, a resolution or a `Label`."""
    if row.is_false_positive:
        return FP
    return tuple(getattr(row, name) for name in NODE_FIELDS)
