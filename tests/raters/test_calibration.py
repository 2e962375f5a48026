"""Lena reads how far her machine raters' confidences can be trusted (#28): the expected
calibration error (ECE) and the reliability bins of every rater with confidences, on its stored
labels of final issues, equal the textbook formula and scikit-learn's binning; the classifier's
confidences are calibrated on its cross-fitted out-of-fold labels, so that on 1,200 synthetic
texted issues its ECE is at most 0.05 (uncalibrated it was about 0.16) and its labels with
confidence at or above T are right about T of the time or more; the raters page draws each
rater's reliability diagram with a table beside it."""

from __future__ import annotations

import math
import random
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.urls import reverse
from sklearn.calibration import calibration_curve

from annotator.models import Project
from ingest.models import Repository
from labeling.models import MachineLabel, MachineRater, Resolution
from raters.calibration import Calibrator
from raters.runs import RaterSettings, add_rater, create_run, run_rater
from raters.validation import validation_report
from taxonomy.models import TaxonomyVersion
from tests.conftest import STUDY_TAXONOMY_ID
from tests.raters.conftest import add_finals, label_fields
from tests.raters.synthetic import add_texted_finals, texted_issues

pytestmark = pytest.mark.django_db


def direct_ece(pairs: list[tuple[float, bool]]) -> float:
    """The ECE by its definition (Guo et al. 2017): bins (m-1)/10 < c <= m/10 of the
    confidence as written in decimal (0 in the first bin), sum over bins of
    |bin| / n * |accuracy(bin) - mean confidence(bin)|."""
    members: dict[int, list[tuple[float, bool]]] = {}
    for confidence, hit in pairs:
        m = max(math.ceil(Decimal(str(confidence)) * 10), 1)
        members.setdefault(m, []).append((confidence, hit))
    n = len(pairs)
    return sum(
        len(rows)
        / n
        * abs(sum(h for _, h in rows) / len(rows) - sum(c for c, _ in rows) / len(rows))
        for rows in members.values()
    )


# --- ECE on stored labels, against the formula ------------------------------------------------

# Ties at every kind of edge (0, 0.1, 0.3, 0.5, 0.7, 1), bins of 1 to 6 labels, empty bins.
STORED = [
    (0.0, False), (0.1, False), (0.1, True), (0.1, False), (0.3, True), (0.3, False),
    (0.35, True), (0.5, True), (0.5, False), (0.5, True), (0.5, True), (0.7, True),
    (0.72, False), (0.9, True), (0.95, True), (1.0, True), (1.0, True), (1.0, False),
    (1.0, True), (1.0, True),
]  # fmt: skip


@pytest.fixture
def hand_labeled(project, repository) -> MachineRater:
    """An llm rater's stored labels on 20 final issues with the confidences above, right or
    wrong as listed; and three labels the figures must leave out: an invalid output, a label
    without a confidence, a label on an issue not final."""
    issues = add_finals(project, repository, len(STORED), noise=0.0, open_issues=1)
    finals = {r.issue_id: r.label_code for r in Resolution.objects.filter(project=project)}
    rater = MachineRater.objects.create(project=project, name="gpt", kind="llm", model="m")
    codes = ["A.1", "B.1", "C.1", "C.2", "FP"]
    for issue, (confidence, hit) in zip(issues, STORED, strict=False):
        final = finals[issue.pk]
        said = final if hit else codes[(codes.index(final) + 1) % len(codes)]
        MachineLabel.objects.create(
            rater=rater, issue=issue, confidence=confidence, **label_fields(project, said)
        )
    extra = add_finals(project, repository, 2, noise=0.0, start=3000)
    MachineLabel.objects.create(rater=rater, issue=extra[0], confidence=0.9, valid=False)
    MachineLabel.objects.create(
        rater=rater, issue=extra[1], confidence=None, **label_fields(project, "A.1")
    )
    open_issue = issues[-1]
    assert not Resolution.objects.filter(issue=open_issue).exists()
    MachineLabel.objects.create(
        rater=rater, issue=open_issue, confidence=0.95, **label_fields(project, "A.1")
    )
    return rater


def test_the_ece_of_stored_labels_is_the_formulas(project, hand_labeled):
    [row] = validation_report(project)["raters"]
    assert row["n"] == 21  # 20 with confidences and the one without; not the invalid one
    assert row["ece"] == pytest.approx(direct_ece(STORED), abs=1e-12)
    # The probe can fire: the same labels binned left-closed give another figure.
    left_closed: dict[int, list[tuple[float, bool]]] = {}
    for c, h in STORED:
        left_closed.setdefault(min(int(Decimal(str(c)) * 10), 9), []).append((c, h))
    other = sum(
        len(r) / 20 * abs(sum(h for _, h in r) / len(r) - sum(c for c, _ in r) / len(r))
        for r in left_closed.values()
    )
    assert abs(other - row["ece"]) > 0.01

    bins = row["reliability"]
    assert [b[2] for b in bins] == [4, 0, 2, 1, 4, 0, 1, 1, 1, 6]  # unequal, two empty
    assert [(b[0], b[1]) for b in bins] == [(i / 10, (i + 1) / 10) for i in range(10)]
    # scikit-learn's reliability curve (right-closed bins too) on the same labels.
    accuracy, confidence = calibration_curve(
        [h for _, h in STORED], [c for c, _ in STORED], n_bins=10
    )
    filled = [b for b in bins if b[2]]
    assert [b[3] for b in filled] == pytest.approx(list(confidence))
    assert [b[4] for b in filled] == pytest.approx(list(accuracy))


def test_a_rater_without_confidences_has_no_ece(project, repository):
    [issue] = add_finals(project, repository, 1, noise=0.0)
    rater = MachineRater.objects.create(project=project, name="once", kind="llm", model="m")
    MachineLabel.objects.create(rater=rater, issue=issue, **label_fields(project, "A.1"))
    [row] = validation_report(project)["raters"]
    assert row["n"] == 1 and row["ece"] is None
    assert all(b[2] == 0 for b in row["reliability"])


def test_the_page_draws_each_raters_reliability_diagram_with_a_table(
    client, lead, project, hand_labeled
):
    client.force_login(lead)
    body = client.get(reverse("raters_page", args=[project.pk])).content.decode()
    assert 'id="reliability"' in body and 'class="reliability-chart"' in body
    assert body.count('<rect class="accuracy"') == 8  # the eight bins with labels
    ece = validation_report(project)["raters"][0]["ece"]
    assert f"gpt: expected calibration error {ece:.3f}" in body
    table = body[body.index('class="reliability-table"') :]
    assert table.count("<tr>") == 1 + 10  # head and every bin, empty ones too
    assert '<td>(0.2, 0.3]</td><td class="num">2</td>' in table
    assert "css/raters.css" in body


def test_the_command_prints_the_ece(project, hand_labeled, capsys):
    call_command("raters", "--project", project.name)
    ece = validation_report(project)["raters"][0]["ece"]
    assert f"expected calibration error {ece:.3f} (10 bins)" in capsys.readouterr().out


# --- The calibration map -----------------------------------------------------------------------


def test_the_map_is_monotone_and_says_how_often_labels_are_right():
    rng = random.Random(5)
    raw = [rng.uniform(0.1, 0.9) for _ in range(2000)]
    # Underconfident (the case #28 found): right with probability 1 / (1 + (1 - c) / (e c)),
    # the raw log-odds plus one; at 0.5 raw, 0.731.
    hits = [rng.random() < 1 / (1 + (1 - c) / (math.e * c)) for c in raw]
    for n, method in ((2000, "isotonic"), (200, "sigmoid")):
        cal = Calibrator(raw[:n], hits[:n])
        assert cal.describe() == {"method": method, "fitted_on": n}
        grid = [i / 20 for i in range(2, 19)]
        mapped = cal(grid)
        assert mapped == sorted(mapped)
        # Near 0.5 raw, about 0.73 of the labels are right: the map says so.
        assert cal([0.5])[0] == pytest.approx(0.731, abs=0.06), method


def test_one_outcome_only_gives_a_cautious_constant():
    cal = Calibrator([0.4, 0.6, 0.9], [True, True, True])
    assert cal.describe()["method"] == "constant"
    assert cal([0.1, 0.99]) == [0.8, 0.8]  # (3 + 1) / (3 + 2), never a certain 1


# --- 1,200 synthetic texted issues --------------------------------------------------------------


@pytest.fixture(scope="module")
def synthetic_id(module_db, request) -> int:
    """1,200 synthetic texted issues, all final, labeled by a classifier (one run, cross-fitted
    and calibrated), built once for the module."""

    def build() -> int:
        version = TaxonomyVersion.objects.get(pk=request.config.stash[STUDY_TAXONOMY_ID])
        project = Project.objects.create(name="Synthetic 1,200", taxonomy_version=version)
        repository = Repository.objects.create(
            forge=Repository.Forge.GITHUB,
            api_url="https://api.github.com",
            owner="synthetic",
            name="texted",
        )
        add_texted_finals(project, repository, texted_issues(1200, seed=0))
        rater = add_rater(project, RaterSettings(name="tfidf", kind="classifier"))
        run = run_rater(create_run(rater, "final").pk)
        assert (run.status, run.done) == ("done", 1200), run.error
        return project.pk

    return module_db(build)


@pytest.fixture
def synthetic(synthetic_id, db) -> Project:
    return Project.objects.get(pk=synthetic_id)


def _stored(project: Project) -> list[tuple[float, float, bool, int]]:
    """(calibrated, uncalibrated confidence, right, fold) of each stored label on a final."""
    codes = ("issue_type", "theme", "sub_theme")
    finals = {
        r.issue_id: r.label_code
        for r in Resolution.objects.filter(project=project).select_related(*codes)
    }
    rows = MachineLabel.objects.filter(rater__project=project, is_current=True).select_related(
        *codes
    )
    return [
        (
            label.confidence,
            label.parameters["uncalibrated_confidence"],
            label.label_code == finals[label.issue_id],
            label.fold,
        )
        for label in rows
    ]


def test_the_calibrated_classifier_is_within_0_05_on_1200_synthetic_issues(synthetic):
    [row] = validation_report(synthetic)["raters"]
    assert row["n"] == 1200 and 0.7 <= row["accuracy_theme"] <= 0.9
    stored = _stored(synthetic)
    assert row["ece"] == pytest.approx(direct_ece([(c, h) for c, _, h, _ in stored]), abs=1e-12)
    assert row["ece"] <= 0.05
    # Uncalibrated, the same labels were far off (the probe fires): it said less than it knew.
    raw = [(r, h) for _, r, h, _ in stored]
    assert direct_ece(raw) > 0.1
    assert sum(r for r, _ in raw) / 1200 < row["accuracy_theme"] - 0.1
    # Each fold's map is monotone: within a fold, no label's order by confidence changes.
    for fold in range(5):
        mine = sorted((r, c) for c, r, _, f in stored if f == fold)
        assert [c for _, c in mine] == sorted(c for _, c in mine)
    label = MachineLabel.objects.filter(rater__project=synthetic).first()
    assert label is not None
    assert label.parameters["calibration"] == {"method": "isotonic", "fitted_on": 960}


def test_confidence_at_or_above_t_is_right_at_least_about_t(synthetic):
    [row] = validation_report(synthetic)["raters"]
    checked = 0
    for threshold, share, accuracy in row["coverage"]:
        if share * 1200 >= 50:
            assert accuracy >= threshold - 0.03, (threshold, accuracy)
            checked += 1
    assert checked >= 5
    # Within a bin, too: a bin of 50 labels or more is right as often as it says, give or take.
    for low, high, n, confidence, accuracy in row["reliability"]:
        if n >= 50:
            assert abs(accuracy - confidence) <= 0.08, (low, high, n, confidence, accuracy)
    # Uncalibrated, labels said 0.2 to 0.5 and were right far more often (#28: 47-75 %).
    low = [(r, h) for _, r, h, _ in _stored(synthetic) if 0.2 < r <= 0.5]
    said, right = sum(r for r, _ in low) / len(low), sum(h for _, h in low) / len(low)
    assert len(low) >= 50 and right > said + 0.15
