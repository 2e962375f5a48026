"""Exports gain machine_labels.csv: one row per issue and rater with its current label,
spreadsheet-safe, final issues unless a lead asks for every issue."""

from __future__ import annotations

import csv
import io
import zipfile

import pytest

from dataset.exports import MACHINE_LABEL_COLUMNS, build_zip
from labeling.models import MachineLabel, MachineRater, ProjectIssue
from raters.runs import create_run, run_rater

pytestmark = pytest.mark.django_db


def _rows(project, tmp_path, everything=False) -> list[dict]:
    path = tmp_path / "out.zip"
    build_zip(project, path, everything=everything)
    with zipfile.ZipFile(path) as zf:
        text = zf.read("machine_labels.csv").decode()
    assert text.splitlines()[0] == ",".join(MACHINE_LABEL_COLUMNS)
    return list(csv.DictReader(io.StringIO(text)))


def test_the_export_holds_each_raters_current_out_of_sample_label(project, finals, tmp_path):
    # A rater named like a spreadsheet formula: the cell must come out as text.
    rater = MachineRater.objects.create(project=project, name="=HYPERLINK(1)", kind="classifier")
    run_rater(create_run(rater, "all").pk)
    run_rater(create_run(rater, "final").pk)  # a rerun: only current labels are exported

    rows = _rows(project, tmp_path)
    finals_urls = set(
        ProjectIssue.objects.filter(project=project, status="final").values_list(
            "issue__url", flat=True
        )
    )
    assert len(rows) == 60 and {r["Issue_URL"] for r in rows} == finals_urls
    current = {
        m.issue.url: m for m in MachineLabel.objects.filter(is_current=True).select_related("issue")
    }
    for row in rows:
        label = current[row["Issue_URL"]]
        assert row["label"] == label.label_code and label.fold is not None
        assert float(row["confidence"]) == pytest.approx(label.confidence, abs=1e-6)
        assert (row["rater"], row["kind"], row["model"]) == (
            "'=HYPERLINK(1)",
            "classifier",
            "tfidf-logreg",
        )
    assert {r["label"] for r in rows} <= {"A.1", "B.1", "C.1", "C.2", "FP"}

    # A lead's export of every issue holds the open issues' labels too.
    assert len(_rows(project, tmp_path, everything=True)) == 70


def test_an_invalid_output_is_exported_with_an_empty_label(project, finals, tmp_path):
    rater = MachineRater.objects.create(project=project, name="tfidf", kind="classifier")
    run_rater(create_run(rater, "final").pk)
    broken = MachineLabel.objects.filter(is_current=True).order_by("pk").first()
    MachineLabel.objects.filter(pk=broken.pk).update(valid=False, raw_output="=1+1")
    rows = {r["Issue_URL"]: r for r in _rows(project, tmp_path)}
    assert rows[broken.issue.url]["label"] == ""
    assert sum(1 for r in rows.values() if r["label"]) == 59
