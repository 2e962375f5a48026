"""A release describes every machine rater (#23): the lead trained a classifier rater on the
project's 60 final issues and configured an llm rater whose key lives in an environment
variable; the lead then freezes a release, and Rita (researcher) reads in it what each rater is
(model, version, prompt or configuration and its hash, parameters, dates, validation figures,
enlisted or not) in DATASHEET.md and the metadata, and the rater's labels in
`machine_labels.csv`. The key, and its variable's name, appear in no file.

Expected kappas are computed here with scikit-learn's `cohen_kappa_score` from the stored
labels, not by the code under test.
"""

from __future__ import annotations

import hashlib
import json
import zipfile

import pytest
from sklearn.metrics import cohen_kappa_score

from dataset.releases import build_release, create_release, release_path
from labeling.models import MachineLabel, MachineRater, Resolution
from raters import prompt
from raters.runs import create_run, run_rater
from raters.validation import validation_report

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fit_once")]

KEY_VARIABLE = "RATERS_RELEASE_TEST_KEY"
KEY_VALUE = "sk-test-7f3c9a0e51d24b8c"


@pytest.fixture
def export_root(settings, tmp_path):
    settings.EXPORT_ROOT = tmp_path / "exports"
    return settings.EXPORT_ROOT


@pytest.fixture
def rated(project, finals, monkeypatch):
    """The classifier has labeled every issue; the llm rater is configured, never run."""
    monkeypatch.setenv(KEY_VARIABLE, KEY_VALUE)
    classifier = MachineRater.objects.create(
        project=project, name="bag-of-words", kind="classifier", confidence_threshold=0.9
    )
    run_rater(create_run(classifier, "all").pk)
    MachineRater.objects.create(
        project=project,
        name="local-llm",
        kind="llm",
        model="qwen2.5-7b-instruct",
        api_url="http://127.0.0.1:9/v1",
        api_key_env=KEY_VARIABLE,
        temperature=0.0,
        samples=3,
        enlisted=True,
    )
    return project


def _release(project, lead) -> dict[str, bytes]:
    made = build_release(create_release(project, lead, "1.0.0").pk)
    with zipfile.ZipFile(release_path(made)) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def _expected_kappas(project) -> tuple[float, float]:
    finals = {
        r.issue_id: r.label_code
        for r in Resolution.objects.filter(project=project, is_current=True).select_related(
            "issue_type", "theme", "sub_theme"
        )
    }
    labels = MachineLabel.objects.filter(rater__name="bag-of-words", is_current=True, valid=True)
    pairs = [(m.label_code, finals[m.issue_id]) for m in labels if m.issue_id in finals]
    assert len(pairs) == 60
    # The synthetic codes are themes (A.1, B.1, C.1, C.2) or FP; their type is the letter.
    theme = cohen_kappa_score([a for a, _ in pairs], [b for _, b in pairs])
    kind = cohen_kappa_score([a[0] if a != "FP" else a for a, _ in pairs],
                             [b[0] if b != "FP" else b for _, b in pairs])  # fmt: skip
    return float(kind), float(theme)


def test_the_datasheet_describes_each_machine_rater(rated, lead, export_root):
    files = _release(rated, lead)
    sheet = files["DATASHEET.md"].decode()
    section = sheet.split("## Machine raters", 1)[1].split("\n## ", 1)[0]

    classifier = section.split("### bag-of-words", 1)[1].split("### ", 1)[0]
    kappa_type, kappa_theme = _expected_kappas(rated)
    assert "Kind: classifier; model: `tfidf-logreg`; version 1" in classifier
    assert f"{kappa_type:.3f} (type), {kappa_theme:.3f} (theme)" in classifier
    assert "Validation on 60 final issues" in classifier
    ece = validation_report(rated)["raters"][0]["ece"]
    assert f"expected calibration error {ece:.3f} (10 equal-width bins" in classifier
    assert "Enlisted in the stopping rule: no (confidence threshold 0.900)" in classifier
    assert '"chi2_best_columns": 5000' in classifier and '"C": 10.0' in classifier
    assert "trained" in classifier and "on 60 final issues" in classifier

    llm = section.split("### local-llm", 1)[1]
    assert "model: `qwen2.5-7b-instruct`" in llm and "Enlisted in the stopping rule: yes" in llm
    assert '"samples": 3' in llm and '"temperature": 0.0' in llm
    template_hash = hashlib.sha256(prompt.TEMPLATE.encode()).hexdigest()
    assert f"Prompt template (SHA-256 `{template_hash}`" in llm
    assert "    You label issue reports of deep-learning software" in llm
    # The prompt template, not an issue's text.
    assert "Problem 1000" not in section


def test_the_metadata_lists_the_machine_labels_and_describes_the_raters(rated, lead, export_root):
    files = _release(rated, lead)
    package = json.loads(files["datapackage.json"])
    resource = next(r for r in package["resources"] if r["path"] == "machine_labels.csv")
    assert resource["schema"]["primaryKey"] == ["Issue_URL", "rater"]
    assert "machine_raters.json" in {r["path"] for r in package["resources"]}
    described = {r["name"]: r for r in package["machine_raters"]}
    assert set(described) == {"bag-of-words", "local-llm"}
    assert described["bag-of-words"]["validation"]["n"] == 60
    assert described["bag-of-words"]["validation"]["ece"] is not None
    assert sum(b[2] for b in described["bag-of-words"]["validation"]["reliability"]) == 60
    assert described["local-llm"]["enlisted"] is True
    assert json.loads(files["machine_raters.json"])["machine_raters"] == package["machine_raters"]
    assert files["machine_labels.csv"].decode().count("bag-of-words") == 60

    croissant = json.loads(files["croissant.json"])
    record_set = next(r for r in croissant["recordSet"] if r["name"] == "machine-labels")
    assert (
        "bag-of-words: classifier, model tfidf-logreg version 1, not enlisted"
        in (record_set["description"])
    )
    assert "machine_raters.json" in {d["name"] for d in croissant["distribution"]}


def test_no_file_of_the_release_holds_the_key_or_its_variable(rated, lead, export_root):
    files = _release(rated, lead)
    # The probe can fire: the variable names a value the test put in the environment.
    assert MachineRater.objects.get(name="local-llm").api_key_env == KEY_VARIABLE
    for name, data in files.items():
        text = data.decode("utf-8", errors="replace")
        assert KEY_VALUE not in text, name
        assert KEY_VARIABLE not in text, name
        assert "127.0.0.1:9" not in text, name


def test_a_project_without_machine_raters_says_so(project, finals, lead, export_root):
    files = _release(project, lead)
    sheet = files["DATASHEET.md"].decode()
    assert "## Machine raters" in sheet
    assert "no machine raters" in sheet.split("## Machine raters", 1)[1].split("\n## ", 1)[0]
    assert json.loads(files["datapackage.json"])["machine_raters"] == []
    assert files["machine_labels.csv"].decode().strip().count("\n") == 0  # the header alone


@pytest.mark.slow  # frictionless and mlcroissant read every table of the release
def test_the_release_with_machine_labels_validates_and_loads(rated, lead, export_root, tmp_path):
    import frictionless
    import mlcroissant

    made = build_release(create_release(rated, lead, "1.0.0").pk)
    with zipfile.ZipFile(release_path(made)) as zf:
        zf.extractall(tmp_path / "release")
    directory = tmp_path / "release"
    report = frictionless.validate(str(directory / "datapackage.json"))
    assert report.valid, [t.flatten(["rowNumber", "type", "note"])[:3] for t in report.tasks]
    assert {t.name: t.stats.get("rows") for t in report.tasks}["machine-labels"] == 60
    dataset = mlcroissant.Dataset(jsonld=directory / "croissant.json")
    records = list(dataset.records("machine-labels"))
    assert len(records) == 60
    assert {r["machine-labels/rater"].decode() for r in records} == {"bag-of-words"}
