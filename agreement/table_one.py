"""The study's Table I: per repository, issues per year, final types and false-positive rate.

Rows are grouped by the repository's study group ("PyTorch", "vLLM" …), falling back to its
full name. Year columns count the issues still in the dataset (not excluded as false positives)
by the year the issue was created on its forge, or, while that date has not been fetched, by its
study year (the year of the study's URL list it was imported from, `<repo>_<year>.txt`). So the
study's published files alone (URL lists and label CSVs) give the paper's Table I. The type
columns count final labels; the false-positive rate is the share of screened finals (below)
excluded as not LLM-related. The "Sum" row adds the counts and, as the paper
does, averages the per-repository rates.

**Issues or rows** (`count`): by default an issue counts once. The paper counts the rows of its
label files, and six issue URLs appear twice in them (38,742 rows, 38,736 issues), so its
PyTorch and MindSpore cells are larger by those repeats. `count="rows"` counts an issue once
more for every row that repeats it in the imported files (`dataset.models.PublishedRepeat`,
read through the `Project.published_repeats` relation), under that row's own final label; it
then gives the paper's cells from the published files. Issues labeled in the tool have no rows
and count once either way.

**The false-positive rate is counted over the screened finals only, and unknown is None, not
0.** The published label files hold only the issues kept as LLM-related: an imported final label
is never a false positive, so it says nothing of the rate and would only dilute it (10,000
imported finals and one false positive decided here are not a rate of 0.0001). A repository's
rate is its false positives over its *screened* finals: those that could carry a false-positive
mark, i.e. decided in the tool (any method but "imported") or themselves a false positive. With
no screened final the false positives and the rate are None (blank in the CSV and on the page,
null in the API), and the Sum row averages the known rates only.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.utils.translation import gettext_noop

from annotator.models import Project
from labeling.labels import NODE_FIELDS
from labeling.models import ProjectIssue, Resolution
from taxonomy.lineage import Translator

YEARS = (2023, 2024, 2025)
# How Table I counts: every issue once (the default), or every published row (see above).
COUNT_ISSUES, COUNT_ROWS = "issues", "rows"
COUNTS = (COUNT_ISSUES, COUNT_ROWS)
# The paper's order. The labels are the CSV's and the API's keys (English); the pages translate
# them, and the Sum row's name, with {% translate %}.
TYPE_COLUMNS = (
    ("A", gettext_noop("Question")),
    ("C", gettext_noop("Bug")),
    ("B", gettext_noop("Requirement")),
)
SUM = gettext_noop("Sum")


@dataclass
class TableOneRow:
    name: str
    years: dict[int, int] = field(default_factory=lambda: dict.fromkeys(YEARS, 0))
    other_years: int = 0
    types: dict[str, int] = field(default_factory=lambda: {c: 0 for c, _ in TYPE_COLUMNS})
    final: int = 0
    false_positives: int = 0
    # The rate's denominator: finals that could carry a false-positive mark (decided in the
    # tool, or a false positive); imported finals never can (see the module docstring).
    screened: int = 0
    # The total row only: the mean of the repositories' false-positive rates (the study's
    # "average" column), not the pooled rate.
    average_rate: float | None = None

    @property
    def rate_known(self) -> bool:
        """Whether the rate can be told: some final could carry a false-positive mark."""
        return self.screened > 0

    @property
    def false_positive_rate(self) -> float | None:
        """False positives over the screened finals, or None when there is none."""
        if not self.screened:
            return None
        return self.false_positives / self.screened

    @property
    def known_false_positives(self) -> int | None:
        """The false positives, or None where the files cannot tell them."""
        return self.false_positives if self.rate_known else None

    def count(
        self,
        year: int | None,
        final: tuple[bool, str | None] | None,
        decided_in_tool: bool,
    ) -> None:
        """Count one issue (or one published row): its year unless it is a false positive,
        its final label's type, and what it tells of the false-positive rate."""
        if final is not None:
            is_false_positive, type_code = final
            self.final += 1
            if decided_in_tool or is_false_positive:
                self.screened += 1
            if is_false_positive:
                self.false_positives += 1
                return
            if type_code is not None:
                self.types[type_code] = self.types.get(type_code, 0) + 1
        if year in self.years:
            self.years[year] += 1
        else:
            self.other_years += 1

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            **{str(y): n for y, n in self.years.items()},
            **{label: self.types[code] for code, label in TYPE_COLUMNS},
            "false_positive_rate": self.false_positive_rate,
        }


def issue_year(created_at: datetime | None, study_year: int | None) -> int | None:
    """The year Table I counts an issue in: its forge creation date's, else its study year."""
    return created_at.year if created_at is not None else study_year


def table_one(project: Project, count: str = COUNT_ISSUES) -> tuple[list[TableOneRow], TableOneRow]:
    """Rows per repository group for the project's issues, and the Sum row. `count` is
    "issues" (each issue once) or "rows" (each published row; see the module docstring)."""
    if count not in COUNTS:
        raise ValueError(f"count: one of {', '.join(COUNTS)}")
    rows: dict[str, TableOneRow] = {}
    # Plain values, not model instances: a full study has ~40,000 final labels. A final label
    # is counted under its type in the project's version (a theme moved to another type
    # counts there), read through the lineage; one without a counterpart under its own type.
    translate = Translator(project.taxonomy_version)

    def mapped(is_fp: bool, type_code: str | None, ids: list) -> tuple[bool, str | None]:
        node = translate.label_from_ids(is_fp, *ids).issue_type
        return (is_fp, node.code if node is not None else type_code)

    finals = {}
    for issue_id, is_fp, method, type_code, *ids in Resolution.objects.filter(
        project=project, is_current=True
    ).values_list("issue_id", "is_false_positive", "method", "issue_type__code", *NODE_FIELDS):
        finals[issue_id] = (mapped(is_fp, type_code, ids), method != Resolution.Method.IMPORTED)
    scope = ProjectIssue.objects.filter(project=project).values_list(
        "issue_id",
        "issue__created_at",
        "issue__study_year",
        "issue__repository__group",
        "issue__repository__owner",
        "issue__repository__name",
    )
    for issue_id, created_at, study_year, group, owner, name in scope.iterator(chunk_size=5000):
        key = group or f"{owner}/{name}"
        row = rows.setdefault(key, TableOneRow(key))
        final, in_tool = finals.get(issue_id, (None, False))
        row.count(issue_year(created_at, study_year), final, in_tool)
    if count == COUNT_ROWS:
        # The dataset app's repeats, through the reverse relation (agreement imports nothing
        # of dataset): each repeated row counts under its own final label.
        repeats = project.published_repeats
        for is_fp, type_code, *ids, created_at, study_year, group, owner, name in repeats.filter(
            issue__project_issues__project=project
        ).values_list(
            "is_false_positive",
            "issue_type__code",
            *NODE_FIELDS,
            "issue__created_at",
            "issue__study_year",
            "issue__repository__group",
            "issue__repository__owner",
            "issue__repository__name",
        ):
            key = group or f"{owner}/{name}"
            row = rows.setdefault(key, TableOneRow(key))
            row.count(issue_year(created_at, study_year), mapped(is_fp, type_code, ids), False)
    ordered = sorted(rows.values(), key=lambda r: r.name.lower())
    total = TableOneRow(SUM)
    rates = []
    per_type: dict[str, int] = defaultdict(int)
    for row in ordered:
        for year, n in row.years.items():
            total.years[year] += n
        total.other_years += row.other_years
        for code, n in row.types.items():
            per_type[code] += n
        total.final += row.final
        total.false_positives += row.false_positives
        total.screened += row.screened
        if row.false_positive_rate is not None:
            rates.append(row.false_positive_rate)
    total.types = {c: per_type.get(c, 0) for c, _ in TYPE_COLUMNS}
    total.average_rate = sum(rates) / len(rates) if rates else None
    return ordered, total


def table_one_records(rows: list[TableOneRow], total: TableOneRow) -> list[dict[str, Any]]:
    """Table I as plain records (the API and the page): counts, the screened finals (the
    rate's denominator), and the false positives and their rate as None where no final could
    carry a false-positive mark; the Sum row's rate is the mean of the known rates."""
    out = []
    for row in [*rows, total]:
        out.append(
            {
                "name": row.name,
                "years": {str(y): row.years[y] for y in YEARS},
                "other_years": row.other_years,
                "issues": sum(row.years.values()),
                "types": {label: row.types[code] for code, label in TYPE_COLUMNS},
                "final": row.final,
                "screened": row.screened,
                "false_positives": row.known_false_positives,
                "false_positive_rate": (
                    row.average_rate if row is total else row.false_positive_rate
                ),
            }
        )
    return out
