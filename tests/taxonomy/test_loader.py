"""The study's taxonomy CSVs load as 3 types, 18 themes and 70 sub-themes with the paper's codes."""

from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from taxonomy.loader import (
    DEFAULT_DIR,
    TaxonomyFileError,
    parse_study_dir,
    parse_type_file,
    split_details,
)
from taxonomy.models import TaxonomyNode, TaxonomyVersion

SHARED = Path(__file__).resolve().parents[3] / "shared" / "reference" / "taxonomy"
HEADER = "rootcause,subcategory,symptoms\n"


def test_shipped_copy_is_the_studys_files():
    if not SHARED.exists():
        pytest.skip("../shared is not beside this checkout")
    for name in ["bug_symptoms.csv", "question_intents.csv", "requirement_expections.csv"]:
        assert (DEFAULT_DIR / name).read_bytes() == (SHARED / name).read_bytes()


@pytest.mark.django_db
def test_command_loads_three_types_eighteen_themes_seventy_sub_themes(no_taxonomy, capsys):
    call_command("load_taxonomy", str(DEFAULT_DIR))
    version = TaxonomyVersion.objects.get()
    by_level = {lvl: version.nodes.filter(level=lvl) for lvl in TaxonomyNode.Level}
    assert by_level[TaxonomyNode.Level.TYPE].count() == 3
    assert by_level[TaxonomyNode.Level.THEME].count() == 18
    assert by_level[TaxonomyNode.Level.SUB_THEME].count() == 70
    per_type = {
        t.code: version.nodes.filter(level=3, parent__parent=t).count()
        for t in by_level[TaxonomyNode.Level.TYPE]
    }
    assert per_type == {"A": 9, "B": 16, "C": 45}
    themes = sorted(by_level[TaxonomyNode.Level.THEME].values_list("code", flat=True))
    assert themes == sorted(
        [f"A.{i}" for i in range(1, 5)]
        + [f"B.{i}" for i in range(1, 5)]
        + [f"C.{i}" for i in range(1, 11)]
    )
    assert "70 sub-themes" in capsys.readouterr().out


@pytest.mark.django_db
def test_themes_follow_the_csv_order_and_paper_names():
    types = {t.code: t for t in parse_study_dir(DEFAULT_DIR)}
    names = {th.code: th.name for t in types.values() for th in t.children}
    assert names["A.1"] == "Unclear Installation Guidance"
    assert names["A.4"] == "Cross-Platform Deployment Issues"
    assert names["B.2"] == "Functionality Support for LLM Development"
    assert names["C.4"] == "Numerical Stability and Precision Management"
    assert names["C.10"] == "Documentation and Maintainability"


def _sub_themes(theme_code):
    types = parse_study_dir(DEFAULT_DIR)
    theme = next(th for t in types for th in t.children if th.code == theme_code)
    return [(s.code, s.name) for s in theme.children]


def test_b2_is_numbered_as_in_the_paper_not_in_csv_row_order():
    subs = _sub_themes("B.2")
    assert [code for code, _ in subs] == [
        f"B.2.{r}" for r in ["i", "ii", "iii", "iv", "v", "vi", "vii"]
    ]
    starts = [
        "API and Interface",
        "Distributed Support",
        "Performance and Resource",
        "Data Support",
        "Model Expansion",
        "Training Workflow",
        "Quantization and Inference Support",
    ]
    for (_, name), start in zip(subs, starts, strict=True):
        assert name.startswith(start), (name, start)


def test_b4_documentation_is_i_and_collaboration_ii():
    subs = dict(_sub_themes("B.4"))
    assert subs["B.4.i"].startswith("Documentation and Tutorial Support")
    assert subs["B.4.ii"].startswith("Collaboration Workflows")


def test_other_themes_keep_row_order():
    subs = dict(_sub_themes("C.1"))
    assert subs["C.1.i"].startswith("Build")
    assert subs["C.1.vi"] == "Platform and Deployment Bugs"


def test_chinese_comma_stays_inside_an_item():
    assert split_details("a、b,c") == ["a、b", "c"]
    types = parse_study_dir(DEFAULT_DIR)
    c11 = types[2].children[0].children[0]
    assert c11.name == "Build、 Installation、 and Low-Level Support Failures"
    assert c11.details[0] == "Compilation failure、build error、platform not supported"


def test_bom_is_ignored():
    spec = parse_type_file("\ufeff" + HEADER + 'T1,S1,"d1,d2"\n', "x.csv", "A", "Question")
    assert spec.children[0].name == "T1"
    assert spec.children[0].children[0].details == ["d1", "d2"]


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("rootcause,symptoms\nT,d\n", 1, "missing column(s): subcategory"),
        (HEADER + "T1,S1,d\n,S2,d\n", 3, "empty theme name"),
        (HEADER + "T1,S1,d\nT1,,d\n", 3, "empty sub-theme name"),
        (HEADER + "T1,S1,d\nT2,S2,d\nT1,S3,d\n", 4, "not contiguous"),
        (HEADER + "T1,S1,d\nT1,S1,e\n", 3, "appears twice"),
        (HEADER + "T1,S1\n", 2, "expected 3 cells"),
    ],
)
def test_malformed_file_names_file_and_line(text, line, fragment):
    with pytest.raises(TaxonomyFileError) as excinfo:
        parse_type_file(text, "bad.csv", "A", "Question")
    assert excinfo.value.line == line
    assert str(excinfo.value).startswith(f"bad.csv, line {line}: ")
    assert fragment in str(excinfo.value)


@pytest.mark.django_db
def test_a_malformed_file_loads_nothing(no_taxonomy, tmp_path):
    for name in ["question_intents.csv", "requirement_expections.csv"]:
        (tmp_path / name).write_bytes((DEFAULT_DIR / name).read_bytes())
    # The third file, read last, is broken on its fourth line.
    good = (DEFAULT_DIR / "bug_symptoms.csv").read_text(encoding="utf-8-sig").splitlines()
    good[3] = "," + good[3].split(",", 1)[1]
    (tmp_path / "bug_symptoms.csv").write_text("\n".join(good), encoding="utf-8")
    with pytest.raises(CommandError, match=r"bug_symptoms.csv, line 4: empty theme name"):
        call_command("load_taxonomy", str(tmp_path))
    assert TaxonomyVersion.objects.count() == 0
    assert TaxonomyNode.objects.count() == 0


@pytest.mark.django_db
def test_loading_twice_makes_a_second_version_and_if_missing_does_not(no_taxonomy):
    call_command("load_taxonomy")
    call_command("load_taxonomy")
    assert list(TaxonomyVersion.objects.values_list("number", flat=True)) == [1, 2]
    call_command("load_taxonomy", "--if-missing")
    assert TaxonomyVersion.objects.count() == 2
