"""The study's taxonomy grew while it was labeled: Lena the lead renames, moves, merges and
splits themes after the two sample repositories were imported, and every export still works
(and, in Chromium, the agreement report, Table I and the exports page, with Rita the
researcher downloading an export).

The expected labels are derived here from the published CSV files and the edits Lena made
(B.3 moved under Bug gets the code the move gave it, C.1 merged into C.9 becomes C.9), never
by calling the export code; agreement is recomputed with statsmodels from them.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from django.core.cache import cache
from statsmodels.stats.inter_rater import fleiss_kappa

from agreement.measures import agreement_report
from annotator.models import Membership, Project, Role
from dataset.exports import build_zip, run_export_job, start_export
from dataset.importer import import_labels
from dataset.models import ExportJob
from taxonomy import edits
from taxonomy.loader import parse_type_file
from taxonomy.models import TaxonomyNode, TaxonomyVersion
from tests.conftest import log_in, make_user
from tests.dataset.helpers import SAMPLES, read_rows

pytestmark = pytest.mark.django_db

# The published files themselves when ../shared sits beside the checkout, else the in-repo
# copies (kept byte-identical by test_import_labels).
SHARED = Path(__file__).resolve().parents[3] / "shared" / "reference" / "sample-labels"
FILES = (
    [SHARED / p.stem / p.name for p in SAMPLES]
    if all((SHARED / p.stem / p.name).exists() for p in SAMPLES)
    else SAMPLES
)
SPLIT_NAME = "Intents split off while labeling"


def node(project: Project, code: str) -> TaxonomyNode:
    project.refresh_from_db()
    return project.taxonomy_version.nodes.get(code=code)


def evolve(lead) -> tuple[Project, TaxonomyVersion, dict[str, str]]:
    """The samples imported, then the taxonomy edited four times by the lead."""
    import_labels("Study", FILES)
    project = Project.objects.get(name="Study")
    Membership.objects.create(project=project, user=lead, role=Role.LEAD)
    first = project.taxonomy_version

    edits.rename(project, lead, node(project, "C.2"), "Renamed while labeling")
    _, moved = edits.move(project, lead, node(project, "B.3"), node(project, "C"))
    edits.merge(project, lead, node(project, "C.1"), node(project, "C.9"))
    # The new theme takes one of A.2's sub-themes along (a detail file has a row per sub-theme).
    edits.split(project, lead, node(project, "A.2"), SPLIT_NAME, children=[node(project, "A.2.i")])
    project.refresh_from_db()
    assert project.taxonomy_version.number == first.number + 4
    # The study's published codes, as each one reads after Lena's edits.
    mapping = {"B.3": moved.code, "C.1": "C.9"}
    assert moved.code.startswith("C.") and moved.code not in {"C.1", "C.9"}
    return project, first, mapping


@pytest.fixture
def evolved(taxonomy_version, lead, researcher):
    """The evolved study of this test alone (for the transactional test)."""
    project, first, mapping = evolve(lead)
    Membership.objects.create(project=project, user=researcher, role=Role.RESEARCHER)
    return project, first, mapping


@pytest.fixture(scope="module")
def evolved_ids(module_db) -> tuple[int, int, dict[str, str]]:
    """The import and the four edits, once for the module's tests that only read them."""

    def build() -> tuple[int, int, dict[str, str]]:
        project, first, mapping = evolve(make_user("lena-lead-shared"))
        return project.pk, first.pk, mapping

    return module_db(build)


@pytest.fixture
def shared_evolved(evolved_ids, db, researcher):
    """The module's evolved study, with this test's Rita as a researcher in it."""
    project_id, first_id, mapping = evolved_ids
    project = Project.objects.get(pk=project_id)
    Membership.objects.create(project=project, user=researcher, role=Role.RESEARCHER)
    cache.clear()  # (the agreement report caches by project id)
    return project, TaxonomyVersion.objects.get(pk=first_id), dict(mapping)


def mapped_rows(mapping: dict[str, str]) -> dict[str, list[list[str]]]:
    """Each published file's rows with the edited codes replaced (header kept)."""
    out = {}
    for path in FILES:
        rows = read_rows(path)
        out[path.name] = [rows[0]] + [[r[0], *(mapping.get(c, c) for c in r[1:])] for r in rows[1:]]
    return out


def theme_kappa(rows: list[list[str]]) -> float:
    """Fleiss' kappa over theme codes of rows `Issue_URL,Label1..7,Final`, by statsmodels."""
    themes = sorted({c for r in rows for c in r[1:-1]})
    return float(fleiss_kappa(np.array([[Counter(r[1:-1])[t] for t in themes] for r in rows])))


def test_a_label_with_no_counterpart_keeps_its_code_and_is_listed(
    project, issues_in_project, lead, annotator, other_annotator, tmp_path
):
    """Lena added a theme and Ada used it; then an admin put the project back on the study's
    version, where that theme does not exist: the label is exported with its own code."""
    from labeling.models import ProjectIssue
    from tests.builders import final_issue

    study = project.taxonomy_version
    newer, added = edits.add(project, lead, node(project, "C"), "Checkpoint format drift")
    project.refresh_from_db()
    issue = issues_in_project[0]
    item = ProjectIssue.objects.get(project=project, issue=issue)
    final_issue(project, item, added.code, added.code)
    Project.objects.filter(pk=project.pk).update(taxonomy_version=study)
    project.refresh_from_db()
    assert not study.nodes.filter(code=added.code).exists()

    path = tmp_path / "back.zip"
    manifest = build_zip(project, path)  # never a KeyError
    with zipfile.ZipFile(path) as zf:
        text = zf.read(f"labels/{issue.repository.name}.csv").decode().lstrip("\ufeff")
        rows = list(csv.reader(io.StringIO(text)))
        assert rows[1] == [issue.url, added.code, added.code, added.code]
        [record] = [json.loads(line) for line in zf.read("issues.jsonl").decode().splitlines()]
        assert record["resolution"]["code"] == added.code
        assert record["resolution"]["in_current_version"] is False
        assert record["resolution"]["original_version"] == str(newer)
        assert zf.read("agreement.csv") and zf.read("table_one.csv")
    listed = manifest["labels_without_counterpart"]
    assert sorted(entry["label"] for entry in listed) == sorted(
        ["final", *(f"rater-{u.pk}" for u in (annotator, other_annotator))]
    )
    assert {(e["issue"], e["original_code"], e["original_version"]) for e in listed} == {
        (issue.url, added.code, str(newer))
    }


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_report_table_one_and_exports_after_taxonomy_edits(
    browser,
    live_server,
    evolved,
    lead,
    researcher,
):
    project, _first, mapping = evolved
    errors: list[str] = []

    lead_page = browser.new_page()
    lead_page.on("pageerror", lambda exc: errors.append(str(exc)))
    log_in(lead_page, live_server, lead.username)
    report = lead_page.goto(f"{live_server.url}/projects/{project.pk}/agreement/")
    assert report.status == 200
    # The merged theme is reported under its target only.
    headers = lead_page.locator("th[title]").all_inner_texts()
    assert "C.9" in headers and "C.1" not in headers, headers
    table_one = lead_page.goto(f"{live_server.url}/projects/{project.pk}/table-one/")
    assert table_one.status == 200
    assert lead_page.locator("table").count() >= 1
    exports = lead_page.goto(f"{live_server.url}/projects/{project.pk}/exports/")
    assert exports.status == 200

    # The researcher's export, built by the job the worker would run.
    job = start_export(project, researcher)
    run_export_job(job.pk)
    job.refresh_from_db()
    assert job.status == ExportJob.Status.DONE, job.error

    rita = browser.new_page()
    rita.on("pageerror", lambda exc: errors.append(str(exc)))
    log_in(rita, live_server, researcher.username)
    rita.goto(f"{live_server.url}/projects/{project.pk}/exports/")
    with rita.expect_download() as download_info:
        rita.locator(f"a[href$='/exports/{job.pk}/download/']").first.click()
    path = download_info.value.path()
    expected = mapped_rows(mapping)
    with zipfile.ZipFile(path) as zf:
        for name, rows in expected.items():
            text = zf.read(f"labels/{name}").decode("utf-8").lstrip("\ufeff")
            assert list(csv.reader(io.StringIO(text))) == rows
    assert not errors
    lead_page.close()
    rita.close()


# --- after the transactional test: the study shared by the module (module_db) ------------


def test_every_export_works_after_rename_move_merge_and_split(shared_evolved, tmp_path):
    project, first, mapping = shared_evolved
    expected = mapped_rows(mapping)
    imported = sum(len(rows) - 1 for rows in expected.values())
    assert imported == 1194

    path = tmp_path / "evolved.zip"
    manifest = build_zip(project, path)
    with zipfile.ZipFile(path) as zf:
        # Study-format CSVs: every imported row, labels in the current version.
        for name, rows in expected.items():
            text = zf.read(f"labels/{name}").decode("utf-8")
            assert list(csv.reader(io.StringIO(text.lstrip("\ufeff")))) == rows
        assert manifest["labels_without_counterpart"] == []
        assert manifest["taxonomy_version_id"] == project.taxonomy_version_id

        # JSON Lines: one line per issue; a merged label carries both codes.
        records = [json.loads(line) for line in zf.read("issues.jsonl").decode().splitlines()]
        assert len(records) == imported
        by_url = {r["url"]: r for r in records}
        published = {r[0]: r for rows in map(read_rows, FILES) for r in rows[1:]}
        merged = next(url for url, r in published.items() if r[-1] == "C.1")
        record = by_url[merged]
        assert record["resolution"]["code"] == "C.9"
        assert record["resolution"]["original_code"] == "C.1"
        assert record["resolution"]["original_version"] == str(first)
        assert record["resolution"]["in_current_version"] is True
        moved = next(url for url, r in published.items() if r[-1] == "B.3")
        final = by_url[moved]["resolution"]
        assert (final["code"], final["type"], final["original_code"]) == (
            mapping["B.3"],
            "C",
            "B.3",
        )
        for annotation, code in zip(
            by_url[moved]["annotations"], published[moved][1:-1], strict=True
        ):
            assert annotation["original_code"] == code
            assert annotation["code"] == mapping.get(code, code)

        # Taxonomy CSVs: the current tree, the moved theme under Bug, the renamed name.
        bug = parse_type_file(zf.read("taxonomy/bug_symptoms.csv").decode(), "b.csv", "C", "Bug")
        theme_names = [t.name for t in bug.children]
        assert node(project, mapping["B.3"]).name in theme_names
        assert "Renamed while labeling" in theme_names
        assert first.nodes.get(code="C.1").name not in theme_names  # merged away
        question = parse_type_file(
            zf.read("taxonomy/question_intents.csv").decode(), "q.csv", "A", "Question"
        )
        assert SPLIT_NAME in [t.name for t in question.children]

        # Table I: final types counted in the current version (B.3 now reads as a bug).
        finals = Counter(r[-1].split(".")[0] for rows in expected.values() for r in rows[1:])
        table = list(csv.reader(io.StringIO(zf.read("table_one.csv").decode())))
        header, total = table[0], table[-1]
        assert total[0] == "Sum"
        assert [int(total[header.index(name)]) for name in ("Question", "Bug", "Requirement")] == [
            finals["A"],
            finals["C"],
            finals["B"],
        ]
        assert finals["C"] == 691 + Counter(r[-1] for r in published.values())["B.3"]

        # Agreement: the CSV has the table, under the new version.
        agreement = list(csv.DictReader(io.StringIO(zf.read("agreement.csv").decode())))
        bug_row = next(r for r in agreement if r["type"] == "Bug" and r["level"] == "theme")
        assert int(bug_row["issues_used"]) == finals["C"]


def test_agreement_under_the_new_version_equals_statsmodels_on_mapped_labels(shared_evolved):
    project, first, mapping = shared_evolved
    rows = [r for rows in mapped_rows(mapping).values() for r in rows[1:]]
    report = agreement_report(project, use_cache=False)
    groups = {g["code"]: g for g in report["groups"]}
    for type_code in ("A", "B", "C"):
        members = [r for r in rows if r[-1].split(".")[0] == type_code]
        group = groups[type_code]
        assert group["issues"] == len(members)
        assert group["levels"]["theme"]["kappa"] == pytest.approx(theme_kappa(members), abs=1e-12)
    assert groups["all"]["levels"]["theme"]["kappa"] == pytest.approx(theme_kappa(rows), abs=1e-12)
    # Type level over all issues: the first letter of each mapped code.
    as_types = [[r[0], *(c.split(".")[0] for c in r[1:])] for r in rows]
    assert groups["all"]["levels"]["type"]["kappa"] == pytest.approx(
        theme_kappa(as_types), abs=1e-12
    )
    # The first version still reads as the study published it.
    old = agreement_report(project, use_cache=False, version=first)
    old_bug = next(g for g in old["groups"] if g["code"] == "C")
    assert round(old_bug["levels"]["theme"]["kappa"], 6) == 0.753476


def test_the_api_shows_rita_the_labels_as_the_export_does(shared_evolved, researcher):
    from django.urls import reverse
    from rest_framework.test import APIClient

    project, _, mapping = shared_evolved
    published = {r[0]: r for rows in map(read_rows, FILES) for r in rows[1:]}
    finals = Counter(mapping.get(r[-1], r[-1]) for r in published.values())
    api = APIClient()
    api.force_authenticate(researcher)
    issues = reverse("api_issues", args=[project.pk])

    def count(**filters) -> int:
        return api.get(issues, filters).json()["count"]

    assert (
        count(theme="C.9")
        == finals["C.9"]
        == sum(Counter(r[-1] for r in published.values())[c] for c in ("C.1", "C.9"))
    )
    assert count(theme="C.1") == 0  # merged away
    assert count(theme=mapping["B.3"]) == finals[mapping["B.3"]] > 0
    assert count(final_type="C") == sum(n for code, n in finals.items() if code[0] == "C")

    merged = next(url for url, r in published.items() if r[-1] == "C.1")
    resolutions = api.get(reverse("api_resolutions", args=[project.pk]), {"page_size": 2000})
    body = resolutions.json()
    rows = body["results"] if isinstance(body, dict) else body
    while isinstance(body, dict) and body.get("next"):
        body = api.get(body["next"]).json()
        rows += body["results"]
    final = next(r for r in rows if r["issue_url"] == merged)
    assert (final["code"], final["theme"], final["original_code"]) == ("C.9", "C.9", "C.1")
    assert final["in_current_version"] is True
