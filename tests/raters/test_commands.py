"""The lead's commands: add a rater, run it, read its validation (text and JSON)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from labeling.models import MachineLabel, MachineRater
from raters.models import RaterRun

pytestmark = pytest.mark.django_db


def _call(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_the_lead_adds_runs_and_reads_a_classifier_from_the_command_line(project, finals):
    out = _call("add_rater", "--project", project.name, "--name", "tfidf", "--kind", "classifier")
    assert "added rater tfidf (classifier, tfidf-logreg)" in out
    out = _call("machine_label", "--project", project.name, "--rater", "tfidf", "--wait")
    assert "70 issues labeled, 0 invalid" in out
    assert MachineLabel.objects.filter(is_current=True).count() == 70

    report = json.loads(_call("raters", "--project", project.name, "--json"))
    assert set(report) == {"raters", "human", "model_model"}
    [row] = report["raters"]
    assert set(row) == {
        "name",
        "kind",
        "n",
        "kappa_type",
        "kappa_theme",
        "accuracy_theme",
        "invalid_rate",
        "coverage",
        "alt_test",
        "ece",
        "reliability",
    }
    assert (row["name"], row["kind"], row["n"]) == ("tfidf", "classifier", 60)
    assert all(len(point) == 3 for point in row["coverage"])
    assert 0 <= row["ece"] <= 1 and sum(b[2] for b in row["reliability"]) == 60
    assert set(report["human"]) == {"kappa_theme_median", "kappa_theme_min", "kappa_theme_max"}
    assert report["model_model"] == []

    text = _call("raters", "--project", project.name)
    assert f"tfidf (classifier): n 60, kappa type {row['kappa_type']:.3f}" in text
    assert f"calibration: expected calibration error {row['ece']:.3f} (10 bins)" in text
    assert "human annotators, kappa theme: median" in text


def test_machine_label_without_wait_queues_a_run(
    project, finals, django_capture_on_commit_callbacks
):
    MachineRater.objects.create(project=project, name="tfidf", kind="classifier")
    with django_capture_on_commit_callbacks() as callbacks:
        out = _call("machine_label", "--project", project.name, "--rater", "tfidf")
    run = RaterRun.objects.get()
    assert f"run {run.pk} of tfidf queued" in out
    assert len(callbacks) == 1
    assert run.status == "pending"


def test_an_llm_rater_stores_the_name_of_the_key_variable_only(project, settings):
    settings.MODEL_API_HOSTS = ["http://127.0.0.1:8000"]  # the endpoint must be listed
    settings.MODEL_API_KEY_VARS = ["RATER_KEY"]  # and the key's variable
    _call(
        "add_rater", "--project", project.name, "--name", "gpt", "--kind", "llm",
        "--model", "m-small", "--api-url", "http://127.0.0.1:8000/v1",
        "--api-key-env", "RATER_KEY", "--temperature", "0.2", "--samples", "3",
    )  # fmt: skip
    rater = MachineRater.objects.get(name="gpt")
    assert (rater.kind, rater.api_key_env, rater.temperature, rater.samples) == (
        "llm",
        "RATER_KEY",
        0.2,
        3,
    )
    assert not rater.enlisted and rater.confidence_threshold is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["add_rater", "--project", "nope", "--name", "x", "--kind", "classifier"], "project:"),
        (["add_rater", "--project", "{p}", "--name", "x", "--kind", "oracle"], "kind:"),
        (["add_rater", "--project", "{p}", "--name", "x", "--kind", "llm"], "model:"),
        (
            ["add_rater", "--project", "{p}", "--name", "x", "--kind", "llm", "--model", "m",
             "--api-url", "http://127.0.0.1:8000/v1", "--api-key-env", "sk-123 secret"],
            "api-key-env:",
        ),
        (
            ["add_rater", "--project", "{p}", "--name", "x", "--kind", "llm", "--model", "m",
             "--api-url", "http://127.0.0.1:8000/v1", "--api-key-env", "SECRET_KEY"],
            "api-key-env: not a key variable the admin allows",
        ),
        (
            ["add_rater", "--project", "{p}", "--name", "x", "--kind", "classifier",
             "--temperature", "hot"],
            "temperature:",
        ),
        (["machine_label", "--project", "{p}", "--rater", "ghost"], "rater:"),
        (["raters", "--project", "nope"], "project:"),
    ],
)  # fmt: skip
def test_bad_arguments_name_the_option(project, args, message):
    with pytest.raises(CommandError, match=rf"^{message}"):
        _call(*[a.replace("{p}", project.name) for a in args])
    assert not MachineRater.objects.exists()


def test_a_bad_scope_and_a_failed_run_are_errors(project, repository):
    from tests.raters.conftest import add_finals

    add_finals(project, repository, 5)
    MachineRater.objects.create(project=project, name="tfidf", kind="classifier")
    with pytest.raises(CommandError, match=r"^only:"):
        _call("machine_label", "--project", project.name, "--rater", "tfidf", "--only", "x")
    with pytest.raises(CommandError, match="at least 20 final issues"):
        _call("machine_label", "--project", project.name, "--rater", "tfidf", "--wait")
