"""The study's taxonomy detail files come back as they went in, and stay spreadsheet-safe.

Loaded and written back, the three files parse to the same rows in the same order, with the
same details: repeats, ", " inside the study's prose and the requirement file's stray quotes
kept. Their counts are the paper's where the paper and the files agree. A summary an annotator
wrote can't smuggle a spreadsheet formula into a detail file.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from django.core.management import call_command

from labeling.details import export_detail_csv, sync_entries
from lib import csvsafe
from taxonomy import edits
from taxonomy.detail_files import export_version_csv
from taxonomy.loader import DEFAULT_DIR, TYPE_FILES, count_details, parse_study_dir
from taxonomy.models import TaxonomyVersion
from taxonomy.search import build_tree
from tests.taxonomy.labels import annotate

STUDY_FILES = {code: DEFAULT_DIR / filename for code, _name, filename in TYPE_FILES}


def parse(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text.removeprefix("\ufeff"))))


def original(code: str) -> str:
    return STUDY_FILES[code].read_text(encoding="utf-8-sig")


@pytest.mark.django_db
@pytest.mark.parametrize("code", ["A", "B", "C"])
def test_each_study_file_round_trips_row_for_row(taxonomy_version, code):
    exported = export_version_csv(taxonomy_version, code)
    assert exported.startswith("\ufeffrootcause,subcategory,symptoms\n")
    assert parse(exported) == parse(original(code))
    # Where the file is what a CSV writer writes (all but the stray-quote row), byte for byte.
    canonical = io.StringIO()
    csv.writer(canonical, lineterminator="\n").writerows(parse(original(code)))
    if canonical.getvalue() == original(code):
        assert exported.removeprefix("\ufeff") == original(code)


def test_counts_are_the_papers_and_the_requirement_count_is_what_the_cells_hold():
    counts = count_details(parse_study_dir(DEFAULT_DIR))
    # The paper: 297 question intents, 1,586 bug symptoms, 754 feature expectations.
    assert counts == {"A": 297, "B": 754, "C": 1586}
    # The requirement file's line 4 spills over 21 cells (unescaped quotes): 18 of its details
    # sit in cells after the third, without which the file would hold 736.
    rows = parse(original("B"))
    assert [len(r) for r in rows].count(21) == 1
    assert sum(len(cell.split(",")) for row in rows[1:] for cell in row[2:3]) == 736


@pytest.mark.django_db
def test_stored_version_shows_the_same_counts_and_keeps_repeats_and_prose(taxonomy_version):
    counts = {t.node.code: t.detail_count for t in build_tree(taxonomy_version)}
    assert counts == {"A": 297, "B": 754, "C": 1586}
    details = [d for n in taxonomy_version.nodes.filter(code__startswith="C.") for d in n.details]
    assert len(details) - len(set(details)) == 5  # the study's five repeated symptoms, kept
    # "Code spelling, indent or logic omission …": two details by the file's rule, and the
    # space after the comma is kept with the second, so it is written back as ", ".
    at = details.index("Code spelling")
    assert details[at + 1].startswith(" indent or logic omission")
    assert "Code spelling, indent or logic omission" in export_version_csv(taxonomy_version, "C")
    assert "(e.g., barrier、broadcast)" in export_version_csv(taxonomy_version, "C")


def test_no_study_detail_or_cell_is_formula_like():
    # Why the spreadsheet-safe writer leaves the study's files as they are.
    for code in STUDY_FILES:
        for row in parse(original(code)):
            for cell in row:
                assert not csvsafe.is_formula_like(cell)
                assert not any(csvsafe.is_formula_like(item) for item in cell.split(","))


@pytest.mark.django_db
def test_export_then_load_through_the_commands_gives_the_same_files_again(no_taxonomy, tmp_path):
    call_command("load_taxonomy", str(DEFAULT_DIR))
    first = TaxonomyVersion.objects.get()
    call_command("export_taxonomy", str(first.pk), "--csv", str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in STUDY_FILES.values()
    )
    call_command("load_taxonomy", str(tmp_path))
    second = TaxonomyVersion.objects.exclude(pk=first.pk).get()
    for code in STUDY_FILES:
        assert parse(export_version_csv(second, code)) == parse(original(code))
    assert list(second.nodes.order_by("code").values_list("code", "name", "details")) == list(
        first.nodes.order_by("code").values_list("code", "name", "details")
    )


@pytest.mark.django_db
def test_an_edited_version_still_writes_the_files_rows_in_order(project, lead):
    v1 = project.taxonomy_version
    node = v1.nodes.get(code="B.2.i")  # the paper's B.2.i is the file's fourth row of B.2
    v2, _ = edits.rename(project, lead, node, "API and Interface Needs")
    expected = [
        [row[0], "API and Interface Needs", *row[2:]] if row[1] == node.name else row
        for row in parse(original("B"))
    ]
    assert parse(export_version_csv(v2, "B")) == expected


@pytest.mark.django_db
def test_a_formula_in_a_summary_never_reaches_a_detail_file_raw(
    client, project, lead, annotator, other_annotator, issues_in_project
):
    # Ada's summary is the first detail of C.1.ii's reviewed list once the version's own
    # details are left out; Otto's comes second, after a comma.
    first, second = issues_in_project[:2]
    annotate(project, first, annotator, "C.1.ii", summary='=HYPERLINK("http://x.example","a")')
    annotate(project, second, other_annotator, "C.1.ii", summary="@SUM(1+1)")
    sync_entries(project)
    for with_version_details in (True, False):
        text = export_detail_csv(project, "C", with_version_details=with_version_details)
        rows = parse(text)
        cells = [cell for row in rows for cell in row]
        items = [item for row in rows[1:] for cell in row[2:] for item in cell.split(",")]
        assert not any(csvsafe.is_formula_like(c) for c in cells + items)
        # One detail (its comma made fullwidth, so it does not split), made inert.
        assert '\'=HYPERLINK("http://x.example"\uff0c"a")' in items
        assert "'@SUM(1+1)" in items

    client.force_login(lead)
    response = client.get(f"/projects/{project.pk}/taxonomy/details/C.csv")
    assert response.status_code == 200
    assert response["Content-Disposition"].endswith('bug_symptoms.csv"')
    body = response.content.decode("utf-8")
    assert "'=HYPERLINK" in body and ",=HYPERLINK" not in body and '"=HYPERLINK' not in body


@pytest.mark.django_db
def test_a_bad_detail_file_names_its_line_and_a_spill_is_only_read_from_a_last_column(tmp_path):
    from taxonomy.loader import TaxonomyFileError, parse_type_file

    spilled = parse_type_file(
        'rootcause,subcategory,symptoms\nT,S,"a,b" c",d\n', "x.csv", "A", "Question"
    )
    sub = spilled.children[0].children[0]
    assert sub.details == ["a", 'b c"', "d"] and sub.detail_cells == [2, 1]
    with pytest.raises(TaxonomyFileError, match=r"^y.csv, line 3: expected 4 cells, got 5"):
        parse_type_file(
            "rootcause,symptoms,subcategory,note\nT,d,S,n\nT,d,S2,n,extra\n", "y.csv", "A", "Q"
        )


def test_shipped_copy_is_still_the_study_files():
    shared = Path(__file__).resolve().parents[3] / "shared" / "reference" / "taxonomy"
    if not shared.exists():
        pytest.skip("../shared is not beside this checkout")
    for path in STUDY_FILES.values():
        assert path.read_bytes() == (shared / path.name).read_bytes()
