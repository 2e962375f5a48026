"""Table I counts issues or published rows, and never shows an unknown false-positive rate as 0
(#21). Lena (lead) imports label files in which two issue URLs appear twice, as six do in the
study's files; Rita (researcher) reads Table I by issue and by row on the page, in the API and in
the export's table_one.csv.

Expected figures are counted by hand from the rows written below, never from the code.
"""

from __future__ import annotations

import csv
import io
import zipfile
from datetime import UTC, datetime

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from agreement.table_one import table_one
from annotator.models import Membership, Project, Role
from dataset.importer import import_labels
from dataset.models import PublishedRepeat
from ingest.models import Issue
from labeling.models import ProjectIssue, Resolution
from tests.annotator.test_table_one_years import PAPER, SAMPLES, paper_table_one
from tests.dataset.helpers import GH, HEADER3, write_csv

pytestmark = pytest.mark.django_db

REPO = "NVIDIA/Megatron-LM"


def row(number: int, code: str) -> list[str]:
    return [f"{GH}{number}", code, code, code, code]


@pytest.fixture
def study(taxonomy_version, tmp_path, lead, researcher, outsider):
    """Two label files: issue 2 repeats in the first file with its own label (C.5), issue 1
    repeats in the second with another type (B.2). 4 issues, 6 rows, all created in 2024."""
    first = write_csv(
        tmp_path / "a.csv",
        [HEADER3, row(1, "A.3"), row(2, "C.5"), row(3, "B.2"), row(2, "C.5")],
    )
    second = write_csv(tmp_path / "b.csv", [HEADER3, row(4, "C.5"), row(1, "B.2")])
    import_labels("Study", [first, second])
    Issue.objects.update(created_at=datetime(2024, 5, 1, tzinfo=UTC))
    project = Project.objects.get(name="Study")
    Membership.objects.create(project=project, user=lead, role=Role.LEAD)
    Membership.objects.create(project=project, user=researcher, role=Role.RESEARCHER)
    project.files = (first, second)  # type: ignore[attr-defined]
    return project


def test_the_import_keeps_each_repeated_row_with_its_own_label(study):
    repeats = {(r.file_name, r.line): r.issue_type.code for r in PublishedRepeat.objects.all()}
    # Line numbers count the header as line 1.
    assert repeats == {("a.csv", 5): "C", ("b.csv", 3): "B"}
    # Importing the same files again adds no repeat.
    import_labels("Study", list(study.files))
    assert PublishedRepeat.objects.count() == 2


def test_table_one_counts_issues_by_default_and_published_rows_on_request(study):
    (by_issue,), _ = table_one(study)
    assert by_issue.name == REPO
    assert by_issue.years[2024] == 4 and by_issue.final == 4
    assert by_issue.types == {"A": 1, "C": 2, "B": 1}
    (by_row,), _ = table_one(study, "rows")
    # The repeats: issue 2 once more as a bug, issue 1 once more as a requirement.
    assert by_row.years[2024] == 6 and by_row.final == 6
    assert by_row.types == {"A": 1, "C": 3, "B": 2}
    with pytest.raises(ValueError, match="count"):
        table_one(study, "lines")


def test_a_false_positive_rate_the_files_cannot_tell_is_unknown_not_zero(study):
    (imported,), total = table_one(study)
    assert imported.false_positives == 0 and imported.final == 4
    assert imported.false_positive_rate is None and imported.known_false_positives is None
    assert total.average_rate is None
    # One issue decided here (a false positive found on review): now the rate is known.
    issue = Issue.objects.get(number="3")
    Resolution.objects.filter(project=study, issue=issue).update(is_current=False)
    Resolution.objects.create(
        project=study, issue=issue, method=Resolution.Method.LEAD_DECISION, is_false_positive=True
    )
    (decided,), total = table_one(study)
    # The rate is over the finals that could be marked a false positive: the one decided
    # here (1 of 1), not the three imported ones beside it.
    assert decided.final == 4 and decided.screened == 1
    assert decided.false_positive_rate == pytest.approx(1 / 1)
    assert total.average_rate == pytest.approx(1 / 1)


def test_rita_switches_the_page_between_issues_and_rows(client, study, researcher, outsider):
    url = reverse("table_one", args=[study.pk])
    client.force_login(researcher)
    page = client.get(url)
    assert page.status_code == 200
    body = page.content.decode()
    assert 'id="table-one-count"' in body and "Counting issues" in body
    assert page.context["rows"][0]["final"] == 4
    # The unknown rate is a blank cell, not 0 %.
    assert '<td class="num fp-rate"></td>' in body and "0%" not in body
    rows = client.get(url, {"count": "rows"})
    assert rows.status_code == 200 and rows.context["rows"][0]["final"] == 6
    assert rows.context["rows"][0]["types"] == {"Question": 1, "Bug": 3, "Requirement": 2}
    bad = client.get(url, {"count": "lines"})
    assert bad.status_code == 400 and "count" in bad.context["form"].errors
    client.force_login(outsider)
    assert client.get(url, {"count": "rows"}).status_code == 404


def test_the_api_gives_the_same_records_with_a_null_rate(study, researcher, outsider):
    url = reverse("api_table_one", args=[study.pk])
    api = APIClient()
    api.force_authenticate(researcher)
    data = api.get(url).json()
    assert data["count"] == "issues"
    first, total = data["rows"]
    assert first["name"] == REPO and first["final"] == 4
    assert first["false_positive_rate"] is None and first["false_positives"] is None
    assert total["name"] == "Sum" and total["false_positive_rate"] is None
    assert api.get(url, {"count": "rows"}).json()["rows"][0]["final"] == 6
    bad = api.get(url, {"count": "lines"})
    assert bad.status_code == 400 and "count" in bad.json()
    api.force_authenticate(outsider)
    assert api.get(url).status_code == 404


def _table_one_csv(path) -> list[dict[str, str]]:
    with zipfile.ZipFile(path) as zf:
        text = zf.read("table_one.csv").decode("utf-8-sig")
    return list(csv.DictReader(io.StringIO(text)))


def test_export_dataset_counts_as_asked_and_leaves_the_unknown_rate_blank(study, tmp_path):
    call_command(
        "export_dataset", "--project", "Study", str(tmp_path / "i.zip"), stdout=io.StringIO()
    )
    call_command(
        "export_dataset",
        "--project",
        "Study",
        str(tmp_path / "r.zip"),
        "--count",
        "rows",
        stdout=io.StringIO(),
    )
    by_issue, by_row = _table_one_csv(tmp_path / "i.zip"), _table_one_csv(tmp_path / "r.zip")
    assert by_issue[0]["repository"] == REPO and by_issue[0]["final"] == "4"
    assert by_row[0]["final"] == "6" and by_row[0]["Bug"] == "3" and by_row[0]["2024"] == "6"
    for table in (by_issue, by_row):
        for line in table:  # the repository and the Sum row
            assert line["false positives"] == "" and line["false positive rate"] == ""
    with pytest.raises(CommandError, match="count"):
        call_command(
            "export_dataset", "--project", "Study", str(tmp_path / "x.zip"), "--count", "x"
        )


def test_issues_labeled_here_count_once_either_way(project, repository, taxonomy_version):
    issue = Issue.objects.create(repository=repository, number="9", url=f"{repository.web_url}/9")
    ProjectIssue.objects.create(project=project, issue=issue, position=0)
    (by_issue,), _ = table_one(project)
    (by_row,), _ = table_one(project, "rows")
    assert by_issue.other_years == by_row.other_years == 1


@pytest.mark.skipif(not PAPER.exists(), reason="../shared is not beside this checkout")
def test_the_two_sample_repositories_give_the_papers_rows_under_both_counts(taxonomy_version):
    """The published sample files repeat no URL (1,114 and 80 distinct URLs, counted here from
    the files): rows and issues give the same cells, the paper's Megatron and MindSpeed rows."""
    labels = sorted(SAMPLES.glob("*/*.csv"))
    for path in labels:
        urls = [line.split(",")[0] for line in path.read_text(encoding="utf-8-sig").splitlines()]
        assert len(urls[1:]) == len(set(urls[1:]))
    call_command("import_issue_urls", *map(str, sorted(SAMPLES.glob("*/*_*.txt"))), "--no-fetch")
    call_command("import_labels", "--project", "Samples", *map(str, labels))
    project = Project.objects.get(name="Samples")
    paper = paper_table_one()
    for count in ("issues", "rows"):
        rows, _ = table_one(project, count)
        cells = {
            r.name: [*(r.years[y] for y in (2023, 2024, 2025)), *r.types.values()] for r in rows
        }
        assert cells == {REPO: paper["Megatron"], "ascend/MindSpeed": paper["MindSpeed"]}
    assert not PublishedRepeat.objects.exists()
