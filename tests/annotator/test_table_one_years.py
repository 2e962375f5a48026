"""Table I from the study's published files alone: URL lists named by year, then the labels.

Issues imported from `<repo>_<year>.txt` lists without fetching them count in the year of
their list; once the forge's creation date is fetched, that date decides. From the two
sample repositories the study published, Table I equals the paper's rows for them.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from agreement.table_one import table_one
from annotator.models import Project
from ingest.models import Issue
from labeling.models import ProjectIssue, Resolution

pytestmark = pytest.mark.django_db

SHARED = Path(__file__).resolve().parents[3] / "shared"
PAPER = SHARED / "seeds" / "paper-designing-dl-frameworks-for-llms.txt"
SAMPLES = SHARED / "reference" / "sample-labels"
GH = "https://github.com/acme/Foo-LM/issues/"


def write_list(directory: Path, name: str, numbers: list[int]) -> Path:
    path = directory / name
    path.write_text("".join(f"{GH}{n}\n" for n in numbers), encoding="utf-8")
    return path


def put_in_project(project: Project, taxonomy_version, finals: dict[str, str]) -> None:
    """Every issue into the project's queue; `finals` maps issue numbers to a theme or 'FP'."""
    for n, issue in enumerate(Issue.objects.order_by("number")):
        ProjectIssue.objects.create(project=project, issue=issue, position=n)
        code = finals.get(issue.number)
        if code is None:
            continue
        node = None if code == "FP" else taxonomy_version.nodes.get(code=code)
        Resolution.objects.create(
            project=project,
            issue=issue,
            method=Resolution.Method.UNANIMOUS,
            is_false_positive=code == "FP",
            issue_type=node.parent if node else None,
            theme=node,
        )


def test_unfetched_issues_count_in_the_year_of_their_list(project, taxonomy_version, tmp_path):
    lists = [
        write_list(tmp_path, "Foo-LM_2023.txt", [1, 2]),
        write_list(tmp_path, "Foo-LM_2024.txt", [3, 4, 5]),
        write_list(tmp_path, "Foo-LM_2025.txt", [6]),
    ]
    call_command("import_issue_urls", *map(str, lists), "--no-fetch")
    assert dict(Issue.objects.values_list("number", "study_year")) == {
        "1": 2023, "2": 2023, "3": 2024, "4": 2024, "5": 2024, "6": 2025,
    }  # fmt: skip
    # Issue 5 was found to be a false positive; 2 and 3 are final bugs, 6 a question.
    put_in_project(project, taxonomy_version, {"2": "C.1", "3": "C.4", "5": "FP", "6": "A.2"})

    (row,), total = table_one(project)
    assert row.name == "acme/Foo-LM"
    assert row.years == {2023: 2, 2024: 2, 2025: 1}  # the false positive is not counted
    assert row.other_years == 0
    assert row.types == {"A": 1, "C": 2, "B": 0}
    assert total.years == row.years


def test_a_fetched_creation_date_wins_over_the_list_year(project, taxonomy_version, tmp_path):
    call_command("import_issue_urls", str(write_list(tmp_path, "x_2024.txt", [7, 8])), "--no-fetch")
    # Hydration found issue 8 created on the last day of 2023 (the list's year was the
    # study's reading; the forge's date is the fact).
    Issue.objects.filter(number="8").update(created_at=datetime(2023, 12, 31, 23, 0, tzinfo=UTC))
    put_in_project(project, taxonomy_version, {})
    (row,), _ = table_one(project)
    assert row.years == {2023: 1, 2024: 1, 2025: 0}


def test_a_list_without_a_year_counts_in_other_years_unless_given_one(
    project, taxonomy_version, tmp_path
):
    plain = write_list(tmp_path, "foo-issues.txt", [9])
    call_command("import_issue_urls", str(plain), "--no-fetch")
    put_in_project(project, taxonomy_version, {})
    (row,), _ = table_one(project)
    assert (row.years, row.other_years) == ({2023: 0, 2024: 0, 2025: 0}, 1)

    # Read again with --year: the year is recorded on the issue already there.
    call_command("import_issue_urls", str(plain), "--no-fetch", "--year", "2025")
    (row,), _ = table_one(project)
    assert (row.years[2025], row.other_years) == (1, 0)


def test_a_url_listed_under_two_years_is_refused_naming_both_places(db, tmp_path, capsys):
    first = write_list(tmp_path, "Foo-LM_2023.txt", [1, 2])
    second = write_list(tmp_path, "Foo-LM_2024.txt", [3, 2])
    with pytest.raises(CommandError, match="1 bad line"):
        call_command("import_issue_urls", str(first), str(second), "--no-fetch")
    err = capsys.readouterr().err
    assert (
        f"{second}, line 2: {GH}2 is listed under 2024 here but under 2023 in {first}, line 2"
        in (err)
    )
    assert Issue.objects.count() == 0


@pytest.mark.parametrize("year", ["0", "1969", "2101", "20245"])
def test_a_year_that_cannot_be_one_is_refused(db, tmp_path, year):
    with pytest.raises(CommandError, match=r"--year: .* is not between 1970 and 2100"):
        call_command("import_issue_urls", str(write_list(tmp_path, "a.txt", [1])), "--year", year)
    assert Issue.objects.count() == 0


def paper_table_one() -> dict[str, list[int]]:
    """The paper's Table I rows: name → [2023, 2024, 2025, Question, Bug, Requirement]."""
    text = PAPER.read_text(encoding="utf-8")
    table = text[text.index("TABLE I") : text.index("Sum", text.index("TABLE I"))]
    rows = {}
    for line in table.splitlines():
        cells = line.split("\t")
        if cells[0] and len(cells) >= 7 and all(re.fullmatch(r"[\d,]+", c) for c in cells[1:7]):
            rows[cells[0]] = [int(c.replace(",", "")) for c in cells[1:7]]
    return rows


@pytest.mark.slow  # every published sample, imported
@pytest.mark.skipif(not PAPER.exists(), reason="../shared is not beside this checkout")
def test_the_published_samples_give_the_papers_table_one_rows(taxonomy_version):
    lists = sorted(SAMPLES.glob("*/*_*.txt"))
    labels = sorted(SAMPLES.glob("*/*.csv"))
    assert len(lists) == 6 and len(labels) == 2
    call_command("import_issue_urls", *map(str, lists), "--no-fetch")
    call_command("import_labels", "--project", "Samples", *map(str, labels))
    project = Project.objects.get(name="Samples")
    rows, _ = table_one(project)
    ours = {
        row.name: [*(row.years[y] for y in (2023, 2024, 2025)), *row.types.values()] for row in rows
    }
    paper = paper_table_one()
    assert ours == {
        "NVIDIA/Megatron-LM": paper["Megatron"],
        "ascend/MindSpeed": paper["MindSpeed"],
    }
    assert all(row.other_years == 0 for row in rows)
