"""Lena reads the agreement report and trusts what it says: a degenerate figure is left out with
its reason (never "poor" without explanation), a figure on fewer than 30 issues is flagged as
too few to read, and agreement.csv holds values rounded to six decimals."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.urls import reverse

from agreement.measures import MIN_ISSUES, agreement_report, report_rows
from annotator.models import Membership, Project, Role
from dataset.exports import write_agreement_csv
from dataset.importer import import_labels
from labeling.models import ProjectIssue
from tests.builders import final_issue
from tests.dataset.helpers import SAMPLES

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def study_id(module_db) -> int:
    """The two published samples, imported once for the module (tests/conftest.py, module_db).
    Their repositories are the ones `issues_in_project` makes, so the pilot's tests come first."""

    def build() -> int:
        import_labels("Study", SAMPLES)
        return Project.objects.get(name="Study").pk

    return module_db(build)


@pytest.fixture
def study(study_id, db, lead):
    cache.clear()  # the same project id in every test: no test reads another's cached figures
    project = Project.objects.get(pk=study_id)
    Membership.objects.create(project=project, user=lead, role=Role.LEAD)
    return project


@pytest.fixture
def pilot(project, issues_in_project, annotator, other_annotator):
    """Six issues labeled by Ada and Otto in the pilot: far fewer than 30."""
    labels = [
        ("C.5", "C.5", "C.5"),
        ("C.1", "C.5", "C.1"),
        ("C.3", "C.3", "C.3"),
        ("B.2", "B.2", "B.2"),
        ("C.5", "C.3", "C.5"),
        ("A.1", "A.1", "A.1"),
    ]
    items = ProjectIssue.objects.filter(project=project).order_by("position")
    for item, (ada, otto, final) in zip(items, labels, strict=True):
        final_issue(project, item, ada, otto, final=final)
    return project


def group(report: dict, code: str) -> dict:
    return next(g for g in report["groups"] if g["code"] == code)


def test_figures_on_fewer_than_30_issues_are_flagged_too_few_to_read(pilot):
    report = agreement_report(pilot, use_cache=False)
    bug = group(report, "C")["levels"]["theme"]
    assert bug["issues"] == 4 < MIN_ISSUES
    assert bug["kappa"] is not None and bug["too_few"] is True
    assert bug["reading"] == "too few issues to read (4 < 30)"
    assert group(report, "all")["levels"]["theme"]["reading"] == "too few issues to read (6 < 30)"
    [pair] = report["pairs"]
    assert pair["shared"] == 6 and pair["too_few"] is True
    assert all(a["cohen_too_few"] for a in report["annotators"])


def test_thirty_issues_are_enough_to_read(project, annotator, other_annotator):
    from ingest.models import Repository
    from tests.conftest import make_issue

    repository = Repository.objects.create(
        forge="github", api_url="https://api.github.com", owner="o", name="many"
    )
    codes = ["C.1", "C.3", "C.5"]
    for n in range(MIN_ISSUES):
        item = ProjectIssue.objects.create(
            project=project, issue=make_issue(repository, n + 1), position=n
        )
        ada, otto = codes[n % 3], codes[n % 3] if n % 5 else "C.9"
        final_issue(project, item, ada, otto, final=codes[n % 3])
    bug = group(agreement_report(project, use_cache=False), "C")["levels"]["theme"]
    assert bug["issues"] == MIN_ISSUES and bug["too_few"] is False
    assert bug["reading"] in {"moderate", "substantial", "almost perfect"}


def test_the_pilot_page_marks_figures_too_few_to_read(client, pilot, lead):
    client.force_login(lead)
    html = client.get(reverse("agreement_report", args=[pilot.pk])).content.decode()
    assert "too few issues to read (4 &lt; 30)" in html
    assert 'class="hint too-few"' in html


def test_type_level_within_a_type_group_is_left_out_with_its_reason(study):
    report = agreement_report(study, use_cache=False)
    for code, name in (("A", "Question"), ("B", "Requirement"), ("C", "Bug")):
        stats = group(report, code)["levels"]["type"]
        assert stats["kappa"] is None and stats["alpha"] is None
        assert stats["degenerate"] is True
        assert stats["reading"] == "not meaningful"
        assert f"final type {name}" in stats["note"]
        assert stats["observed"] is not None  # the plain share of agreeing pairs stays
        # The theme level of the same group is an ordinary figure.
        assert group(report, code)["levels"]["theme"]["kappa"] is not None
    overall = group(report, "all")["levels"]["type"]
    assert overall["kappa"] is not None and overall["note"] == ""
    assert overall["reading"] in {"slight", "fair", "moderate", "substantial", "almost perfect"}
    for row in report_rows(report):
        if row["fleiss_kappa"] is None:
            # Either left out as not meaningful, or with nothing to compute (no sub-themes).
            assert row["reading"] != "poor" and (row["note"] or row["excluded_reason"])


def test_agreement_csv_rounds_to_six_decimals_and_explains(study):
    out = io.StringIO()
    write_agreement_csv(study, out)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    report = report_rows(agreement_report(study))
    assert len(rows) == len(report)
    for written, computed in zip(rows, report, strict=True):
        for column in ("fleiss_kappa", "krippendorff_alpha", "observed_agreement"):
            value = computed[column]
            if value is None:
                assert written[column] == ""
                continue
            assert len(written[column].partition(".")[2]) <= 6
            assert float(written[column]) == round(value, 6)
        assert written["note"] == computed["note"]
    bug = next(r for r in rows if r["type"] == "Bug" and r["level"] == "theme")
    assert bug["fleiss_kappa"] == "0.753476"
    question_type = next(r for r in rows if r["type"] == "Question" and r["level"] == "type")
    assert question_type["fleiss_kappa"] == "" and "final type Question" in question_type["note"]


def test_the_page_and_the_command_say_why(client, study, lead):
    client.force_login(lead)
    html = client.get(reverse("agreement_report", args=[study.pk])).content.decode()
    assert "not meaningful" in html and "every issue in this group has the final type Bug" in html
    out = io.StringIO()
    call_command("agreement", "--project", "Study", "--no-cache", stdout=out)
    question = next(
        line
        for line in out.getvalue().splitlines()
        if line.startswith("Question") and " type " in line
    )
    assert "n/a" in question and "not meaningful" in question and "note:" in question
