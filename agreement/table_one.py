"""The study's Table I: per repository, issues per year, final types and false-positive rate.

Rows are grouped by the repository's study group ("PyTorch", "vLLM" …), falling back to its
full name. Year columns count the issues still in the dataset (not excluded as false positives)
by the year the issue was created on its forge, or, while that date has not been fetched, by its
study year (the year of the study's URL list it was imported from, `<repo>_<year>.txt`). So the
study's published files alone (URL lists and label CSVs) give the paper's Table I. The type
columns count final labels; the false-positive rate is the share of finalized issues excluded as
not LLM-related. The "Sum" row adds the counts and, as the paper
does, averages the per-repository rates.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from annotator.models import Project
from labeling.labels import NODE_FIELDS
from labeling.models import ProjectIssue, Resolution
from taxonomy.lineage import Translator

YEARS = (2023, 2024, 2025)
TYPE_COLUMNS = (("A", "Question"), ("C", "Bug"), ("B", "Requirement"))  # the paper's order


@dataclass
class TableOneRow:
    name: str
    years: dict[int, int] = field(default_factory=lambda: dict.fromkeys(YEARS, 0))
    other_years: int = 0
    types: dict[str, int] = field(default_factory=lambda: {c: 0 for c, _ in TYPE_COLUMNS})
    final: int = 0
    false_positives: int = 0
    # The total row only: the mean of the repositories' false-positive rates (the study's
    # "average" column), not the pooled rate.
    average_rate: float | None = None

    @property
    def false_positive_rate(self) -> float | None:
        return self.false_positives / self.final if self.final else None

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


def table_one(project: Project) -> tuple[list[TableOneRow], TableOneRow]:
    """Rows per repository group for the project's issues, and the Sum row."""
    rows: dict[str, TableOneRow] = {}
    # Plain values, not model instances: a full study has ~40,000 final labels. A final label
    # is counted under its type in the project's version (a theme moved to another type
    # counts there), read through the lineage; one without a counterpart under its own type.
    translate = Translator(project.taxonomy_version)
    finals = {}
    for issue_id, is_fp, type_code, *ids in Resolution.objects.filter(
        project=project, is_current=True
    ).values_list("issue_id", "is_false_positive", "issue_type__code", *NODE_FIELDS):
        mapped = translate.label_from_ids(is_fp, *ids).issue_type
        finals[issue_id] = (is_fp, mapped.code if mapped is not None else type_code)
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
        final = finals.get(issue_id)
        if final is not None:
            is_false_positive, type_code = final
            row.final += 1
            if is_false_positive:
                row.false_positives += 1
                continue
            if type_code is not None:
                row.types[type_code] = row.types.get(type_code, 0) + 1
        year = issue_year(created_at, study_year)
        if year in row.years:
            row.years[year] += 1
        else:
            row.other_years += 1
    ordered = sorted(rows.values(), key=lambda r: r.name.lower())
    total = TableOneRow("Sum")
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
        if row.false_positive_rate is not None:
            rates.append(row.false_positive_rate)
    total.types = {c: per_type.get(c, 0) for c, _ in TYPE_COLUMNS}
    total.average_rate = sum(rates) / len(rates) if rates else None
    return ordered, total
