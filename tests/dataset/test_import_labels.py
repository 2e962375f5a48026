"""Scenarios of `import_labels`: the published samples, repeats, re-runs and every bad input."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotator.models import Membership, Project
from dataset.exports import repositories, write_study_csv
from dataset.importer import LabelImportError, import_labels
from ingest.models import Issue, Repository
from labeling.models import Annotation, ProjectIssue, Resolution
from taxonomy.models import TaxonomyNode, TaxonomyVersion
from tests.dataset.helpers import GH, GITEE, HEADER3, MEGATRON, SAMPLES, read_rows, write_csv

pytestmark = pytest.mark.django_db


def export_rows(project: Project, repository: Repository) -> tuple[str, list[list[str]]]:
    out = io.StringIO()
    write_study_csv(project, repository, out)
    text = out.getvalue()
    return text, [row for row in csv.reader(io.StringIO(text.lstrip("\ufeff"))) if row]


def test_samples_import_and_export_back_row_for_row(taxonomy_version):
    report = import_labels("Study", SAMPLES)

    project = Project.objects.get(name="Study")
    assert project.taxonomy_version == taxonomy_version
    assert report.rows_read == 1194 and report.raters == 7
    assert Issue.objects.count() == 1194
    assert set(Repository.objects.values_list("forge", "owner", "name")) == {
        ("github", "NVIDIA", "Megatron-LM"),
        ("gitee", "ascend", "MindSpeed"),
    }
    # Gitee numbers are alphanumeric and kept as they are.
    assert Issue.objects.filter(repository__forge="gitee", number="IBZ414").exists()
    assert ProjectIssue.objects.filter(project=project, status="final").count() == 1194
    assert Annotation.objects.filter(project=project).count() == 1194 * 7
    assert Resolution.objects.filter(project=project, method="imported").count() == 1194
    pseudonyms = sorted(
        Membership.objects.filter(project=project, role="annotator").values_list(
            "pseudonym", flat=True
        )
    )
    assert pseudonyms == [f"rater-{i}" for i in range(1, 8)]

    for repository in repositories(project):
        text, rows = export_rows(project, repository)
        assert text.startswith("\ufeff")
        assert rows == read_rows(SAMPLES[0] if repository.forge == "github" else SAMPLES[1])


def test_annotations_are_at_theme_level_under_their_type(taxonomy_version):
    import_labels("Study", [MEGATRON])
    issue = Issue.objects.get(url=f"{GH}1515")  # C.5,C.5,C.1,C.1,C.5,C.5,C.5 → C.5
    project = Project.objects.get(name="Study")
    by_rater = {
        a.annotator.memberships.get(project=project).pseudonym: a
        for a in Annotation.objects.filter(issue=issue).select_related(
            "theme", "issue_type", "annotator"
        )
    }
    assert by_rater["rater-3"].theme.code == "C.1"
    assert by_rater["rater-3"].issue_type.code == "C"
    assert by_rater["rater-3"].sub_theme is None
    assert by_rater["rater-1"].theme.level == TaxonomyNode.Level.THEME
    final = Resolution.objects.get(issue=issue)
    assert (final.theme.code, final.issue_type.code, final.method) == ("C.5", "C", "imported")


def test_running_twice_changes_nothing(taxonomy_version):
    import_labels("Study", SAMPLES)
    counts = (Issue.objects.count(), Annotation.objects.count(), Resolution.objects.count())
    report = import_labels("Study", SAMPLES)
    assert report.unchanged_rows == 1194
    assert report.created_issues == report.created_annotations == report.created_resolutions == 0
    assert (Issue.objects.count(), Annotation.objects.count(), Resolution.objects.count()) == counts
    assert Membership.objects.filter(project__name="Study").count() == 7


def test_project_and_taxonomy_are_created_when_missing(no_taxonomy):
    assert not TaxonomyVersion.objects.exists()
    import_labels("Fresh study", [MEGATRON])
    project = Project.objects.get(name="Fresh study")
    assert project.taxonomy_version.nodes.filter(code="C.5").exists()
    assert project.annotations_per_issue == 7


def test_new_project_uses_the_latest_taxonomy_version(taxonomy_version):
    from taxonomy.loader import load_study_taxonomy

    newer = load_study_taxonomy()
    assert newer.number == taxonomy_version.number + 1
    import_labels("Study", [MEGATRON])
    assert Project.objects.get(name="Study").taxonomy_version == newer


def test_a_repeated_url_is_one_issue_and_reported_with_lines(taxonomy_version, tmp_path):
    path = write_csv(
        tmp_path / "repeats.csv",
        [
            HEADER3,
            [f"{GH}1", "C.1", "C.1", "C.2", "C.1"],
            [f"{GH}2", "B.1", "B.1", "B.1", "B.1"],
            [f"{GH}1", "C.1", "C.1", "C.2", "C.1"],
            [f"{GH}1", "C.3", "C.3", "C.3", "C.3"],
        ],
    )
    report = import_labels("Study", [path])
    assert [(r.line, r.first_line, r.differs) for r in report.repeats] == [
        (4, 2, False),
        (5, 2, True),
    ]
    assert "line 5" in "\n".join(report.lines()) and "labels differ" in "\n".join(report.lines())
    assert Issue.objects.count() == 2
    assert Resolution.objects.get(issue__number="1").theme.code == "C.1"  # the first kept


def test_sub_theme_codes_are_accepted_and_exported_back(taxonomy_version, tmp_path):
    rows = [HEADER3, [f"{GH}7", "C.5.i", "C.5.ii", "C.5", "C.5.i"]]
    path = write_csv(tmp_path / "sub.csv", rows)
    import_labels("Study", [path])
    final = Resolution.objects.get()
    assert (final.sub_theme.code, final.theme.code, final.issue_type.code) == ("C.5.i", "C.5", "C")
    project = Project.objects.get(name="Study")
    assert export_rows(project, Repository.objects.get())[1] == rows


def test_labels_already_in_the_project_are_not_overwritten(taxonomy_version, tmp_path):
    first = write_csv(tmp_path / "a.csv", [HEADER3, [f"{GH}1", "C.1", "C.1", "C.1", "C.1"]])
    second = write_csv(tmp_path / "b.csv", [HEADER3, [f"{GH}1", "C.1", "C.2", "C.1", "C.2"]])
    import_labels("Study", [first])
    report = import_labels("Study", [second])
    assert len(report.conflicts) == 2
    assert "rater-2" in report.conflicts[0]
    assert Resolution.objects.get().theme.code == "C.1"
    assert Annotation.objects.count() == 3


MALFORMED = {
    "unknown code": (
        [HEADER3, [f"{GH}1", "C.1", "Z.9", "C.1", "C.1"]],
        2,
        "unknown code 'Z.9' in column Label2",
    ),
    "unknown final code": (
        [HEADER3, [f"{GH}1", "C.1", "C.1", "C.1", "C.99"]],
        2,
        "unknown code 'C.99' in column Final_Label",
    ),
    "missing final column": (
        [["Issue_URL", "Label1", "Label2"], [f"{GH}1", "C.1", "C.1"]],
        1,
        "missing column(s): Final_Label",
    ),
    "missing url column": (
        [["URL", "Label1", "Final_Label"], [f"{GH}1", "C.1", "C.1"]],
        1,
        "missing column(s): Issue_URL",
    ),
    "gap in label columns": (
        [["Issue_URL", "Label1", "Label3", "Final_Label"], [f"{GH}1", "C.1", "C.1", "C.1"]],
        1,
        "missing column(s): Label2",
    ),
    "empty label cell": (
        [HEADER3, [f"{GH}1", "C.1", "", "C.1", "C.1"]],
        2,
        "empty cell in column Label2",
    ),
    "empty url cell": (
        [HEADER3, ["", "C.1", "C.1", "C.1", "C.1"]],
        2,
        "empty cell in column Issue_URL",
    ),
    "unknown forge": (
        [HEADER3, ["https://bitbucket.org/a/b/issues/1", "C.1", "C.1", "C.1", "C.1"]],
        2,
        "not an issue URL of a known forge",
    ),
    "pull request url": (
        [HEADER3, ["https://github.com/a/b/pull/1", "C.1", "C.1", "C.1", "C.1"]],
        2,
        "not an issue URL of a known forge",
    ),
    "short row": (
        [HEADER3, [f"{GH}1", "C.1", "C.1"]],
        2,
        "expected 5 cells, got 3",
    ),
    "empty file": ([], 1, "the file is empty"),
    "issue number over 32 characters": (
        [HEADER3, [f"{GH}{'9' * 33}", "C.1", "C.1", "C.1", "C.1"]],
        2,
        "the issue number is too long, at most 32 characters (this one has 33)",
    ),
    "owner over 200 characters": (
        [HEADER3, [f"https://github.com/{'o' * 201}/x/issues/1", "C.1", "C.1", "C.1", "C.1"]],
        2,
        "the owner is too long, at most 200 characters (this one has 201)",
    ),
    "repository name over 200 characters": (
        [HEADER3, [f"https://gitee.com/o/{'n' * 201}/issues/I1", "C.1", "C.1", "C.1", "C.1"]],
        2,
        "the repository name is too long, at most 200 characters (this one has 201)",
    ),
    "cell over 128 KiB": (
        [HEADER3, [f"{GH}1", "C.1", "C" * (128 * 1024 + 1), "C.1", "C.1"]],
        2,
        "not readable as CSV: a cell is over 131,072 characters",
    ),
    "NUL in a cell": (
        [HEADER3, [f"{GH}1", "C.1", "C.\x001", "C.1", "C.1"]],
        2,
        "NUL character (\\x00) in column Label2",
    ),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_malformed_input_names_file_and_line_and_imports_nothing(taxonomy_version, tmp_path, case):
    rows, line, message = MALFORMED[case]
    good = [f"{GITEE}IBD6YU", "B.2", "B.2", "B.2", "B.2"]
    if len(rows) > 1 and rows[0] == HEADER3:
        rows = [rows[0], good, *rows[1:]]
        line += 1
    path = write_csv(tmp_path / "bad.csv", rows)
    with pytest.raises(LabelImportError) as excinfo:
        import_labels("Study", [path])
    problem = excinfo.value.report.problems[0]
    assert problem.path == str(path) and problem.line == line
    assert message in problem.message
    assert f"{path}, line {line}" in str(excinfo.value)
    assert not Issue.objects.exists() and not Project.objects.filter(name="Study").exists()
    assert not Repository.objects.exists()


def test_not_utf8_and_missing_files_are_reported(taxonomy_version, tmp_path):
    latin = tmp_path / "latin1.csv"
    latin.write_bytes(",".join(HEADER3).encode() + b"\n" + GH.encode() + b"1,C.1,C.1,C.1,C\xe9\n")
    with pytest.raises(LabelImportError) as excinfo:
        import_labels("Study", [latin, tmp_path / "nope.csv"])
    messages = [str(p) for p in excinfo.value.report.problems]
    assert any("latin1.csv" in m and "not UTF-8" in m for m in messages)
    assert any("nope.csv" in m and "cannot open" in m for m in messages)
    assert not Issue.objects.exists()


def test_a_byte_that_is_not_utf8_deep_in_a_file_is_reported_near_its_line(
    taxonomy_version, tmp_path
):
    """The file is decoded a block at a time, so the error comes with the first line of the
    block not yet read: a line past the rows read, at or before the bad byte's."""
    rows = [",".join(HEADER3)] + [f"{GH}{n},C.1,C.1,C.1,C.1" for n in range(1, 400)]
    bad_line = len(rows) + 1
    latin = tmp_path / "late.csv"
    latin.write_bytes("\n".join(rows).encode() + f"\n{GH}400,C.1,C.1,C.1,C".encode() + b"\xe9\n")
    with pytest.raises(LabelImportError) as excinfo:
        import_labels("Study", [latin])
    (problem,) = excinfo.value.report.problems
    assert "not UTF-8" in problem.message
    assert problem.line is not None and 2 < problem.line <= bad_line


def test_skip_invalid_imports_the_rest_and_lists_what_was_skipped(taxonomy_version, tmp_path):
    path = write_csv(
        tmp_path / "mixed.csv",
        [
            HEADER3,
            [f"{GH}1", "C.1", "C.1", "C.1", "C.1"],
            [f"{GH}2", "C.1", "X.1", "C.1", "C.1"],
            ["https://example.org/issues/3", "C.1", "C.1", "C.1", "C.1"],
            [f"{GITEE}IBD6YU", "B.2", "B.2", "B.1", "B.2"],
        ],
    )
    report = import_labels("Study", [path], skip_invalid=True)
    assert report.imported
    assert [p.line for p in report.problems] == [3, 4]
    assert "skipped: 2" in "\n".join(report.lines())
    assert sorted(Issue.objects.values_list("number", flat=True)) == ["1", "IBD6YU"]


def test_a_bad_file_among_good_ones_imports_nothing(taxonomy_version, tmp_path):
    bad = write_csv(tmp_path / "bad.csv", [HEADER3, [f"{GH}1", "C.1", "C.1", "C.1", "Q"]])
    with pytest.raises(LabelImportError):
        import_labels("Study", [MEGATRON, bad])
    assert not Issue.objects.exists()


def test_command_reports_and_fails_without_importing(taxonomy_version, tmp_path):
    out, err = io.StringIO(), io.StringIO()
    call_command("import_labels", "--project", "Study", *map(str, SAMPLES), stdout=out, stderr=err)
    assert "1194 row(s) read from 2 file(s), 7 rater(s)" in out.getvalue()
    assert "1194 issues" in out.getvalue()

    bad = write_csv(tmp_path / "bad.csv", [HEADER3, [f"{GH}9", "C.1", "", "C.1", "C.1"]])
    err = io.StringIO()
    with pytest.raises(CommandError, match="nothing imported"):
        call_command("import_labels", "--project", "Study", str(bad), stdout=out, stderr=err)
    assert f"{bad}, line 2: empty cell in column Label2" in err.getvalue()
    assert not Issue.objects.filter(number="9").exists()


def test_hostile_rows_are_one_line_each_and_the_command_fails(taxonomy_version, tmp_path):
    """Every problem of a hostile file is one line with file and line number, no traceback,
    nothing imported, and the command exits non-zero."""
    bad = write_csv(
        tmp_path / "hostile.csv",
        [
            HEADER3,
            [f"{GH}1", "C.1", "C.1", "C.1", "C.1"],
            [f"{GH}{'1' * 40}", "C.1", "C.1", "C.1", "C.1"],
            [f"https://github.com/{'o' * 300}/x/issues/2", "C.1", "C.1", "C.1", "C.1"],
            [f"{GH}3", "x" * 200_000, "C.1", "C.1", "C.1"],
            [f"{GH}4", "C.1", "C.1\x00", "C.1", "C.1"],
            [f"{GH}5", "C.2", "C.2", "C.2", "C.2"],
        ],
    )
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError, match="4 problem"):
        call_command("import_labels", "--project", "Study", str(bad), stdout=out, stderr=err)
    lines = [line for line in err.getvalue().splitlines() if line.startswith(f"  {bad}, line")]
    assert [line.split(":")[0].rsplit(" ", 1)[1] for line in lines] == ["3", "4", "5", "6"]
    assert "Traceback" not in err.getvalue() + out.getvalue()
    assert not Issue.objects.exists() and not Project.objects.filter(name="Study").exists()


def test_progress_is_reported(taxonomy_version):
    seen: list[tuple[str, int, int]] = []
    import_labels("Study", [MEGATRON], progress=lambda *a: seen.append(a))
    stages = {s for s, _, _ in seen}
    assert {"files read", "issues", "annotations"} <= stages
    assert ("annotations", 1114 * 7, 1114 * 7) in seen


def test_files_are_copies_of_the_published_samples():
    # The copies must stay byte-identical to what the study published (when ../shared exists).
    shared = Path(__file__).resolve().parents[3] / "shared" / "reference" / "sample-labels"
    if not shared.exists():
        pytest.skip("../shared is not beside this checkout")
    for path in SAMPLES:
        assert path.read_bytes() == (shared / path.stem / path.name).read_bytes()


def test_large_import_checks_foreign_keys_once_and_restores_them(taxonomy_version, monkeypatch):
    from django.db import IntegrityError, connection, transaction

    from dataset import bulk

    def foreign_keys() -> set[str]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint "
                "WHERE conrelid = 'annotator_annotation'::regclass AND contype = 'f'"
            )
            return {row[0] for row in cursor.fetchall()}

    before = foreign_keys()
    monkeypatch.setattr(bulk, "REVALIDATE_FROM", 1)  # take the large-import path
    import_labels("Study", [MEGATRON])
    assert Annotation.objects.count() == 1114 * 7
    assert foreign_keys() == before and len(before) == 6
    # And they are enforced again.
    project = Project.objects.get(name="Study")
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(
            "INSERT INTO annotator_annotation (project_id, issue_id, annotator_id, revision,"
            " is_current, is_pilot, summary, note, proposed_category, created_at,"
            " is_false_positive, false_positive_reason) VALUES"
            " (%s, 999999999, %s, 9, false, false, '', '', '', now(), false, '')",
            [project.pk, Membership.objects.filter(project=project).first().user_id],
        )


def test_large_import_leaves_planner_statistics_of_what_it_loaded(taxonomy_version, monkeypatch):
    """A large load is analyzed at once (issue #30): until autovacuum gets to it, the planner
    would take the tables for the few rows they held and plan nested loops over millions."""
    from django.db import connection

    from dataset import bulk

    def estimated_rows(table: str) -> float:
        with connection.cursor() as cursor:
            cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [table])
            return cursor.fetchone()[0]

    monkeypatch.setattr(bulk, "REVALIDATE_FROM", 1)  # take the large-import path
    import_labels("Study", [MEGATRON])
    assert estimated_rows("annotator_annotation") == Annotation.objects.count() == 1114 * 7
    assert estimated_rows("annotator_projectissue") == 1114
    assert estimated_rows("annotator_resolution") == 1114
