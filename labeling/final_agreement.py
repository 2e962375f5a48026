"""Agreement of an annotator's labels with the final labels: the one rule, shown on the lead's
dashboard (per member who labels) and on My progress (to the annotator).

A current label on a final issue is compared with the issue's current final label at three
levels, those of `labeling.labels.label_key`: the label agrees at a level when its key cut to
that level equals the final's, that is

* type: both are false positives, or neither is and the types are the same;
* theme: both are false positives, or neither is and type and theme are the same;
* label: both are false positives, or neither is and type, theme and sub-theme are the same
  (`label_key` equal; the false-positive reason is not compared).

A missing node equals a missing node (a final label without a theme matches a label without
one). The theme level asks for the same type as well: two labels of different types that both
lack a theme do not agree on the theme. Only issues whose status is final count (a reopened
issue's retired final label is history); pilot issues count like any other.

The rule is SQL (`SUMS` over the annotations `a` joined with `FINALS` as `r`), stated once here:
`agreement_with_finals` runs it alone (My progress), and the dashboard's one scan of the
annotations (`labeling.dashboard.label_groups`) adds the same columns to its groups, so its
page keeps one pass over the annotations. `tests/labeling/test_final_agreement.py` checks that
both show the same figures for the same annotator.
"""

from __future__ import annotations

from dataclasses import dataclass

from annotator.models import Project
from labeling.models import Annotation, ProjectIssue, Resolution
from lib import sql

_ANNOTATION_TABLE = Annotation._meta.db_table
_RESOLUTION_TABLE = Resolution._meta.db_table
_PROJECTISSUE_TABLE = ProjectIssue._meta.db_table

# Null-safe equality of a label's and the final label's column (a portable IS NOT DISTINCT FROM).
_SAME = {
    name: f"(a.{name} = r.{name} OR (a.{name} IS NULL AND r.{name} IS NULL))"
    for name in ("issue_type_id", "theme_id", "sub_theme_id")
}
_TYPE = _SAME["issue_type_id"]
_THEME = f"{_TYPE} AND {_SAME['theme_id']}"
_LABEL = f"{_THEME} AND {_SAME['sub_theme_id']}"


def _agrees(same_nodes: str) -> str:
    return (
        "sum(CASE WHEN a.is_false_positive = r.is_false_positive"
        f" AND (r.is_false_positive OR ({same_nodes})) THEN 1 ELSE 0 END)"
    )


# Four aggregate columns over `a` (annotations) LEFT JOINed with `FINALS AS r`: labels compared
# (current ones on final issues), and of these the ones agreeing at type, theme and label level.
SUMS = f"count(r.issue_id), {_agrees(_TYPE)}, {_agrees(_THEME)}, {_agrees(_LABEL)}"

# The project's current final labels of final issues, one row per issue.
FINALS = f"""(
  SELECT r.issue_id, r.is_false_positive, r.issue_type_id, r.theme_id, r.sub_theme_id
  FROM {_RESOLUTION_TABLE} r
  JOIN {_PROJECTISSUE_TABLE} pi
    ON pi.project_id = r.project_id AND pi.issue_id = r.issue_id AND pi.status = 'final'
  WHERE r.project_id = %(project)s AND r.is_current
)"""  # noqa: S608 (table names from the models; values are bound parameters)

_BY_ANNOTATOR_SQL = f"""
SELECT a.annotator_id, {SUMS}
FROM {_ANNOTATION_TABLE} a
JOIN {FINALS} r ON r.issue_id = a.issue_id
WHERE a.project_id = %(project)s AND a.is_current{{annotator}}
GROUP BY a.annotator_id
"""  # noqa: S608 (assembled from the constants above; values are bound parameters)
_ALL_SQL = _BY_ANNOTATOR_SQL.replace("{annotator}", "")
_ONE_SQL = _BY_ANNOTATOR_SQL.replace("{annotator}", " AND a.annotator_id = %(annotator)s")


def _percent(part: int, whole: int) -> int | None:
    return round(100 * part / whole) if whole else None


@dataclass
class FinalAgreement:
    """One annotator's labels on final issues and how many agree with the final label."""

    compared: int = 0
    matched_type: int = 0
    matched_theme: int = 0
    matched_label: int = 0

    @classmethod
    def from_sums(
        cls, compared: int | None, type_: int | None, theme: int | None, label: int | None
    ) -> FinalAgreement:
        """From the four `SUMS` columns (a sum over no row is NULL)."""
        return cls(compared or 0, type_ or 0, theme or 0, label or 0)

    def add(self, other: FinalAgreement) -> None:
        self.compared += other.compared
        self.matched_type += other.matched_type
        self.matched_theme += other.matched_theme
        self.matched_label += other.matched_label

    def shares(self) -> dict[str, int | None]:
        """Percent agreeing at each level (None before any of their issues is final)."""
        return {
            "type": _percent(self.matched_type, self.compared),
            "theme": _percent(self.matched_theme, self.compared),
            "label": _percent(self.matched_label, self.compared),
        }


def agreement_with_finals(
    project: Project, annotator_id: int | None = None
) -> dict[int, FinalAgreement]:
    """Annotator id -> their agreement with the final labels (only annotators with a label on a
    final issue); with `annotator_id`, that annotator's alone (read from their annotations)."""
    params = {"project": project.pk, "annotator": annotator_id}
    statement = _ALL_SQL if annotator_id is None else _ONE_SQL
    return {row[0]: FinalAgreement.from_sums(*row[1:]) for row in sql.rows(statement, params)}


def agreement_of(project: Project, annotator_id: int) -> FinalAgreement:
    """One annotator's agreement with the final labels (zeros before any of theirs is final)."""
    return agreement_with_finals(project, annotator_id).get(annotator_id, FinalAgreement())
