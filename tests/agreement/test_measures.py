"""Agreement checked against published worked examples and the study's reference values."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter

import numpy as np
import pytest
from django.core.cache import cache
from django.core.management import call_command
from statsmodels.stats.inter_rater import fleiss_kappa

from agreement.measures import (
    agreement_report,
    cohen,
    fleiss,
    kripp_alpha,
    kripp_alpha_from_counts,
    nominal_alpha_counts,
    reading,
)
from annotator.models import Project
from dataset.importer import import_labels
from labeling.models import Annotation, Resolution
from taxonomy.models import TaxonomyNode
from tests.dataset.helpers import SAMPLES, read_rows

# Fleiss (1971) as worked on Wikipedia: 10 subjects, 14 raters, 5 categories; kappa 0.210.
WIKIPEDIA_FLEISS = np.array(
    [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
)

# Krippendorff, "Computing Krippendorff's alpha-reliability" (2011), 4 observers x 12 units
# with missing values; nominal alpha = 0.743.
NAN = np.nan
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)

REFERENCE = {"Question": (123, 0.923582), "Requirement": (380, 0.756765), "Bug": (691, 0.753476)}


def test_fleiss_on_the_worked_example():
    # By hand: P-bar = 0.378, P-bar-e = 0.213, kappa = (0.378 - 0.213) / (1 - 0.213) = 0.210.
    n = 14
    p_i = ((WIKIPEDIA_FLEISS**2).sum(axis=1) - n) / (n * (n - 1))
    p_j = WIKIPEDIA_FLEISS.sum(axis=0) / WIKIPEDIA_FLEISS.sum()
    assert p_i.mean() == pytest.approx(0.378, abs=5e-4)
    assert (p_j**2).sum() == pytest.approx(0.213, abs=5e-4)
    assert fleiss(WIKIPEDIA_FLEISS) == pytest.approx(0.210, abs=5e-4)


def test_fleiss_is_undefined_with_one_category_or_one_rater():
    assert fleiss(np.array([[3, 0], [3, 0]])) is None
    assert fleiss(np.array([[1, 0], [0, 1]])) is None


def test_krippendorff_alpha_on_the_published_example():
    assert kripp_alpha(KRIPPENDORFF_2011) == pytest.approx(0.743, abs=5e-4)
    # The items x values count form gives the same value.
    counts = np.zeros((12, 5), dtype=int)
    for rater in KRIPPENDORFF_2011:
        for unit, value in enumerate(rater):
            if not np.isnan(value):
                counts[unit, int(value) - 1] += 1
    assert kripp_alpha_from_counts(counts) == pytest.approx(0.743, abs=5e-4)


def test_large_table_alpha_equals_the_package():
    import krippendorff

    rng = np.random.default_rng(7)
    for _ in range(3):
        table = rng.integers(0, 4, size=(400, 6))
        table = table[table.sum(axis=1) >= 2]
        expected = krippendorff.alpha(value_counts=table, level_of_measurement="nominal")
        assert nominal_alpha_counts(table) == pytest.approx(expected, abs=1e-12)


def test_cohen_on_a_hand_computed_case():
    # 50 items: both yes 20, A yes/B no 5, A no/B yes 10, both no 15.
    # po = 35/50 = 0.7; pe = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = 0.2/0.5 = 0.4.
    a = np.array([1] * 20 + [1] * 5 + [0] * 10 + [0] * 15)
    b = np.array([1] * 20 + [0] * 5 + [1] * 10 + [0] * 15)
    assert cohen(a, b, 2) == pytest.approx(0.4)
    assert cohen(a, a, 2) == pytest.approx(1.0)


def test_landis_koch_reading():
    assert [reading(v) for v in (-0.1, 0.1, 0.3, 0.5, 0.7, 0.9)] == [
        "poor",
        "slight",
        "fair",
        "moderate",
        "substantial",
        "almost perfect",
    ]


def independent_tables() -> dict[str, np.ndarray]:
    """The study's kappa table, built straight from the CSVs: per final type, items x themes."""
    rows = [row for path in SAMPLES for row in read_rows(path)[1:]]
    themes = sorted({code for row in rows for code in row[1:-1]})
    tables = {}
    for type_code, name in (("A", "Question"), ("B", "Requirement"), ("C", "Bug")):
        group = [row for row in rows if row[-1].split(".")[0] == type_code]
        tables[name] = np.array(
            [[Counter(row[1:-1])[t] for t in themes] for row in group], dtype=int
        )
    return tables


# Before the shared study (module_db): its own project and repository, no imported rows.
def test_unequal_rating_counts_are_left_out_of_fleiss_and_kept_in_alpha(
    project, issues_in_project, annotator, other_annotator, lead
):
    version = project.taxonomy_version
    node = {n.code: n for n in TaxonomyNode.objects.filter(version=version)}

    def label(issue, user, code):
        theme = node[code]
        Annotation.objects.create(
            project=project, issue=issue, annotator=user, theme=theme, issue_type=theme.parent
        )

    for issue in issues_in_project[:4]:
        label(issue, annotator, "C.1")
        label(issue, other_annotator, "C.1" if issue != issues_in_project[1] else "C.2")
        label(issue, lead, "C.1")
    label(issues_in_project[4], annotator, "C.1")
    label(issues_in_project[4], other_annotator, "C.3")
    report = agreement_report(project, use_cache=False)
    theme = next(g for g in report["groups"] if g["code"] == "all")["levels"]["theme"]
    # The sixth issue has no label at all: it is not part of the agreement.
    assert theme["raters"] == 3 and theme["issues"] == 4 and theme["excluded"] == 1
    assert theme["excluded_reason"] == (
        "1 with a number of ratings other than 3 (Fleiss needs the same number on every issue)"
    )
    table = np.array([[3, 0, 0], [2, 1, 0], [3, 0, 0], [3, 0, 0]])
    assert theme["kappa"] == pytest.approx(fleiss_kappa(table))
    data = np.array(
        [[1, 1, 1, 1, 1], [1, 2, 1, 1, 3], [1, 1, 1, 1, NAN]]
    )  # raters x issues, 5th issue rated twice
    assert theme["alpha"] == pytest.approx(kripp_alpha(data))


@pytest.fixture(scope="module")
def study_id(module_db) -> int:
    """The two published samples, imported once for the module (tests/conftest.py, module_db)."""

    def build() -> int:
        import_labels("Study", SAMPLES)
        return Project.objects.get(name="Study").pk

    return module_db(build)


@pytest.fixture
def study(study_id, db):
    cache.clear()  # the same project id in every test: no test reads another's cached report
    return Project.objects.get(pk=study_id)


def test_samples_equal_statsmodels_and_the_reference_values(study):
    report = agreement_report(study, use_cache=False)
    groups = {g["name"]: g for g in report["groups"]}
    for name, table in independent_tables().items():
        issues, reference = REFERENCE[name]
        theme = groups[name]["levels"]["theme"]
        assert groups[name]["issues"] == issues == table.shape[0]
        assert theme["issues"] == issues and theme["excluded"] == 0 and theme["raters"] == 7
        assert theme["kappa"] == pytest.approx(fleiss_kappa(table, method="fleiss"), abs=1e-12)
        assert round(theme["kappa"], 6) == reference
        # No rating is missing, so alpha is close to kappa (they differ by the 1/(N*n) term).
        assert theme["alpha"] == pytest.approx(theme["kappa"], abs=1e-3)
    overall = groups["All issues"]["levels"]["theme"]
    assert groups["All issues"]["issues"] == 1194
    all_rows = np.vstack(list(independent_tables().values()))
    assert overall["kappa"] == pytest.approx(fleiss_kappa(all_rows), abs=1e-12)
    # Imported labels stop at themes: the sub-theme level is explained, not computed.
    assert groups["Bug"]["levels"]["sub_theme"]["kappa"] is None
    assert "no labels" in groups["Bug"]["levels"]["sub_theme"]["excluded_reason"]


def test_per_annotator_figures_on_the_samples(study):
    report = agreement_report(study, use_cache=False)
    rows = [row for path in SAMPLES for row in read_rows(path)[1:]]
    r1 = next(a for a in report["annotators"] if a["pseudonym"] == "rater-1")
    agree = sum(row[1] == row[-1] for row in rows) / len(rows)
    assert r1["labels"] == 1194
    assert r1["final_agreement"] == pytest.approx(agree)
    assert len(report["pairs"]) == 21
    # Cohen of rater-1 with rater-2, from the columns directly.
    codes = sorted({c for row in rows for c in row[1:-1]})
    a = np.array([codes.index(row[1]) for row in rows])
    b = np.array([codes.index(row[2]) for row in rows])
    po = (a == b).mean()
    pe = sum((a == k).mean() * (b == k).mean() for k in range(len(codes)))
    assert r1["cohen"]["rater-2"] == pytest.approx((po - pe) / (1 - pe))
    # The most confused pair of themes, counted from the rows: pairs of raters per issue.
    pairs = Counter()
    for row in rows:
        counts = Counter(row[1:-1])
        for x in counts:
            for y in counts:
                if x < y:
                    pairs[(x, y)] += counts[x] * counts[y]
    (x, y), n = pairs.most_common(1)[0]
    top = report["confusions"]["top"][0]
    assert (top["a"], top["b"], top["count"]) == (x, y, n)


def test_report_is_cached_and_recomputed_when_labels_change(study):
    cache.clear()
    first = agreement_report(study)
    assert agreement_report(study)["computed_at"] == first["computed_at"]
    annotation = Annotation.objects.filter(project=study, theme__code="C.5").first()
    c1 = TaxonomyNode.objects.get(version=study.taxonomy_version, code="C.1")
    Annotation.objects.filter(pk=annotation.pk).update(is_current=False)
    Annotation.objects.create(
        project=study,
        issue_id=annotation.issue_id,
        annotator_id=annotation.annotator_id,
        revision=2,
        theme=c1,
        issue_type=c1.parent,
    )
    second = agreement_report(study)
    assert second["computed_at"] != first["computed_at"]
    assert second["types"]["All issues"]["kappa"] != first["types"]["All issues"]["kappa"]
    # Reopening a final label changes the grouping: recomputed too.
    Resolution.objects.filter(project=study).filter(pk=Resolution.objects.first().pk).update(
        is_current=False
    )
    assert agreement_report(study)["types"]["All issues"]["issues"] == 1194
    assert (
        agreement_report(study)["types"]["Bug"]["issues"]
        + agreement_report(study)["types"]["Requirement"]["issues"]
        + agreement_report(study)["types"]["Question"]["issues"]
        == 1193
    )


def test_command_json_prints_the_reference_kappas(study):
    out = io.StringIO()
    call_command("agreement", "--project", "Study", "--json", stdout=out)
    data = json.loads(out.getvalue())
    for name, (issues, kappa) in REFERENCE.items():
        assert data["types"][name]["issues"] == issues
        assert round(data["types"][name]["kappa"], 6) == kappa
    out = io.StringIO()
    call_command("agreement", "--project", "Study", stdout=out)
    assert "0.923582" in out.getvalue() and "0.753476" in out.getvalue()


def test_agreement_csv_export_has_the_table(study):
    from dataset.exports import write_agreement_csv

    out = io.StringIO()
    write_agreement_csv(study, out)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    bug = next(r for r in rows if r["type"] == "Bug" and r["level"] == "theme")
    assert round(float(bug["fleiss_kappa"]), 6) == 0.753476 and bug["issues_used"] == "691"
