"""The classifier rater on synthetic issues: it learns the text's label, reports kappa as
scikit-learn computes it on the stored labels, and labels every final issue out of sample."""

from __future__ import annotations

import random

import pytest
from django.urls import reverse
from django.utils import translation
from sklearn.metrics import cohen_kappa_score

from ingest.models import Issue
from labeling.models import MachineLabel, MachineRater, ProjectIssue, Resolution
from lib.refusal import Refusal
from raters import classifier
from raters.backends import theme_code, type_code
from raters.models import RaterRun
from raters.runs import (
    RaterSettings,
    add_rater,
    create_run,
    final_codes,
    issue_texts,
    run_rater,
)
from raters.validation import validation_report
from tests.raters.conftest import add_finals, label_fields

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fit_once")]


def _classifier(project, lead, name="tfidf") -> MachineRater:
    return add_rater(project, RaterSettings(name=name, kind="classifier"), lead)


def _run(rater, only="all") -> RaterRun:
    return run_rater(create_run(rater, only).pk)


def test_the_lead_runs_a_classifier_and_its_kappa_is_scikit_learns(project, lead, finals):
    rater = _classifier(project, lead)
    run = _run(rater)
    assert (run.status, run.done, run.invalid) == ("done", 70, 0)

    labels = MachineLabel.objects.filter(rater=rater, is_current=True)
    assert labels.count() == 70
    finals_by_issue = {r.issue_id: r.label_code for r in Resolution.objects.filter(project=project)}
    on_final = [label for label in labels if label.issue_id in finals_by_issue]
    machine = [label.label_code for label in on_final]
    final = [finals_by_issue[label.issue_id] for label in on_final]

    row = validation_report(project)["raters"][0]
    assert row["n"] == 60
    assert row["kappa_theme"] == pytest.approx(cohen_kappa_score(machine, final), abs=1e-12)
    assert row["kappa_type"] == pytest.approx(
        cohen_kappa_score([type_code(c) for c in machine], [type_code(c) for c in final]),
        abs=1e-12,
    )
    hits = sum(m == f for m, f in zip(machine, final, strict=True))
    assert row["accuracy_theme"] == pytest.approx(hits / 60)
    # The text carries the label (10 % noise): out of sample the classifier still learns it.
    assert row["kappa_theme"] > 0.6
    assert row["invalid_rate"] == 0
    # Every stored label records what produced it.
    label = on_final[0]
    assert label.model == "tfidf-logreg" and label.model_version == "v1"
    assert len(label.prompt_hash) == 64 and label.parameters["folds"] == classifier.FOLDS
    assert 0 < label.confidence <= 1 and label.raw_output
    rater.refresh_from_db()
    assert (rater.version, rater.trained_on) == (1, 60)


def test_coverage_curve_counts_labels_at_or_above_each_confidence(project, lead, finals):
    rater = _classifier(project, lead)
    _run(rater, "final")
    confidences = sorted(
        MachineLabel.objects.filter(rater=rater, is_current=True).values_list(
            "confidence", flat=True
        )
    )
    coverage = validation_report(project)["raters"][0]["coverage"]
    assert coverage[0][:2] == [0.0, 1.0]
    for threshold, share, _accuracy in coverage:
        assert share == pytest.approx(sum(c >= threshold for c in confidences) / 60)


def test_a_final_issues_label_comes_from_a_model_that_did_not_train_on_it(
    project, lead, repository, finals
):
    """An issue whose only words appear nowhere else, labeled with a rare label: the model
    trained on it would memorise the word (shown below, so the probe can fire); its stored
    label must come from the fold model that never saw it."""
    secret = Issue.objects.create(
        repository=repository,
        number="9999",
        url=f"{repository.web_url}/issues/9999",
        title="zyzzogeton",
        body=" ".join(["zyzzogeton quixotry"] * 30),
    )
    ProjectIssue.objects.create(
        project=project, issue=secret, position=999, status=ProjectIssue.Status.FINAL
    )
    Resolution.objects.create(
        project=project, issue=secret, method="lead_decision", **label_fields(project, "A.1")
    )
    # In sample: a model trained on every final issue, this one included, says A.1.
    codes = final_codes(project)
    texts = issue_texts(codes)
    in_sample = classifier.fit([texts[i] for i in codes], [codes[i] for i in codes])
    assert in_sample.predict([texts[secret.pk]])[0] == ["A.1"]

    rater = _classifier(project, lead)
    _run(rater, "final")
    stored = MachineLabel.objects.get(rater=rater, issue=secret, is_current=True)
    assert stored.label_code != "A.1"
    # The fold and its training-set hash say the same: the fold's set left this issue out.
    folds = classifier.fold_of(list(codes))
    assert stored.fold == folds[secret.pk]
    left_out = [(i, c) for i, c in codes.items() if folds[i] != stored.fold]
    assert stored.prompt_hash == classifier.training_hash(left_out)
    assert stored.prompt_hash != classifier.training_hash(list(codes.items()))


def test_open_issues_are_labeled_by_the_model_trained_on_every_final(project, lead, finals):
    rater = _classifier(project, lead)
    _run(rater, "open")
    labels = MachineLabel.objects.filter(rater=rater, is_current=True)
    assert labels.count() == 10
    assert {label.fold for label in labels} == {None}
    assert {label.prompt_hash for label in labels} == {
        classifier.training_hash(list(final_codes(project).items()))
    }


def test_a_rerun_keeps_the_old_labels_as_history(project, lead, finals):
    rater = _classifier(project, lead)
    _run(rater, "final")
    _run(rater, "final")
    assert MachineLabel.objects.filter(rater=rater).count() == 120
    assert MachineLabel.objects.filter(rater=rater, is_current=True).count() == 60
    assert set(
        MachineLabel.objects.filter(rater=rater, is_current=True).values_list(
            "model_version", flat=True
        )
    ) == {"v2"}


def test_too_few_finals_fail_the_run_with_a_reason(project, lead, repository):
    add_finals(project, repository, 5)
    run = _run(_classifier(project, lead))
    assert run.status == "failed"
    assert "at least 20 final issues" in run.error_shown
    assert not MachineLabel.objects.exists()


def test_the_reason_reads_in_the_readers_language(client, project, lead, repository):
    """The run stored its reason, not its words: a lead reading in Chinese reads it in Chinese,
    whatever language the run ran in (here English, as a worker's)."""
    add_finals(project, repository, 5)
    with translation.override("en"):
        run = _run(_classifier(project, lead))
    with translation.override("zh-hans"):
        assert "至少需要 20 个" in run.error_shown
    client.force_login(lead)
    page = client.get(
        reverse("raters_page", args=[project.pk]), HTTP_ACCEPT_LANGUAGE="zh-hans"
    ).content.decode()
    assert "至少需要 20 个" in page and "at least 20 final issues" not in page
    assert "（已标注 0 / " in page  # noqa: RUF001  (full-width, as Chinese is punctuated)
    english = client.get(reverse("raters_page", args=[project.pk]), HTTP_ACCEPT_LANGUAGE="en")
    assert "at least 20 final issues" in english.content.decode()


def test_human_kappa_against_the_final_label_is_summarised(project, lead, finals, annotator):
    from labeling.models import Annotation

    human = validation_report(project)["human"]
    per_annotator = []
    finals_by_issue = {
        r.issue_id: theme_code(r.label_code) for r in Resolution.objects.filter(project=project)
    }
    for user_id in Annotation.objects.values_list("annotator_id", flat=True).distinct():
        rows = Annotation.objects.filter(annotator_id=user_id)
        per_annotator.append(
            cohen_kappa_score(
                [theme_code(a.label_code) for a in rows],
                [finals_by_issue[a.issue_id] for a in rows],
            )
        )
    assert human["kappa_theme_max"] == pytest.approx(max(per_annotator))
    assert human["kappa_theme_min"] == pytest.approx(min(per_annotator))
    assert human["kappa_theme_min"] < human["kappa_theme_max"]


def test_model_model_agreement_for_every_pair(project, lead, finals):
    a, b = _classifier(project, lead, "first"), _classifier(project, lead, "second")
    _run(a, "final")
    _run(b, "final")
    # Tamper with the second one's labels so the two differ on a known share of issues.
    rng = random.Random(3)
    changed = rng.sample(list(MachineLabel.objects.filter(rater=b, is_current=True)), 15)
    for label in changed:
        MachineLabel.objects.filter(pk=label.pk).update(
            is_false_positive=False, **label_fields(project, "C.2")
        )
    codes = {
        r.name: {
            label.issue_id: theme_code(label.label_code)
            for label in MachineLabel.objects.filter(rater=r, is_current=True)
        }
        for r in (a, b)
    }
    ids = sorted(codes["first"])
    expected = cohen_kappa_score(
        [codes["first"][i] for i in ids], [codes["second"][i] for i in ids]
    )
    [(name_a, name_b, value)] = validation_report(project)["model_model"]
    assert (name_a, name_b) == ("first", "second")
    assert value == pytest.approx(expected)
    assert value < 1


def test_invalid_outputs_are_stored_and_counted(project, lead, finals):
    rater = _classifier(project, lead)
    _run(rater, "final")
    broken = MachineLabel.objects.filter(rater=rater, is_current=True)[:6]
    MachineLabel.objects.filter(pk__in=[label.pk for label in broken]).update(
        valid=False, raw_output="I think it is a bug?"
    )
    row = validation_report(project)["raters"][0]
    assert row["invalid_rate"] == pytest.approx(6 / 60)
    assert row["n"] == 54


def test_an_unknown_code_from_a_backend_is_stored_invalid(project, lead, finals, monkeypatch):
    from raters.backends import Prediction

    rater = _classifier(project, lead)
    items = list(ProjectIssue.objects.filter(project=project).values_list("issue_id", flat=True))

    class Garbled:
        trains = False

        def __init__(self, rater):
            pass

        def label(self, request):
            for item in request.items:
                yield Prediction(issue_id=item.issue_id, code="Z.99", raw_output="Z.99")

    monkeypatch.setattr("raters.runs.backend_for", lambda rater: Garbled(rater))
    run = _run(rater)
    assert (run.status, run.invalid) == ("done", len(items))
    assert not MachineLabel.objects.filter(rater=rater, valid=True).exists()
    assert set(MachineLabel.objects.values_list("raw_output", flat=True)) == {"Z.99"}


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        (RaterSettings(name="", kind="classifier"), "name"),
        (RaterSettings(name="x", kind="oracle"), "kind"),
        (RaterSettings(name="x", kind="llm"), "model"),
        (RaterSettings(name="x", kind="classifier", samples=0), "samples"),
    ],
)
def test_bad_settings_name_the_field(project, lead, settings, field):
    with pytest.raises(Refusal) as caught:
        add_rater(project, settings, lead)
    assert caught.value.field == field
    assert not MachineRater.objects.exists()


def test_a_second_rater_of_the_same_name_is_refused(project, lead):
    _classifier(project, lead)
    with pytest.raises(Refusal, match="already has a rater named"):
        _classifier(project, lead)
