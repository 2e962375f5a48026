"""Releases: a frozen, checksummed dataset with standard metadata, and the diff between two.

Personas: the lead freezes the study's dataset; the researcher downloads and checks it; the
annotator and an outsider never see it.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import zipfile
from collections import Counter
from pathlib import Path

import jsonschema
import pytest
import yaml
from django.core.cache import cache
from django.core.management import CommandError, call_command

from annotator.models import Membership, Project, Role
from dataset.importer import import_labels
from dataset.models import FrozenReleaseError, Release
from dataset.release_diff import diff_labels, write_changes
from dataset.releases import (
    build_release,
    create_release,
    release_path,
    verify_release,
)
from labeling.models import Resolution
from lib.refusal import Refusal
from taxonomy import edits
from taxonomy.models import TaxonomyNode
from tests.dataset.helpers import MINDSPEED, SAMPLES, read_rows

pytestmark = pytest.mark.django_db

CFF_SCHEMA = Path(__file__).resolve().parent.parent / "data" / "cff" / "schema-1.2.0.json"


def _members(project: Project, lead, annotator, researcher) -> Project:
    for user, role in [
        (lead, Role.LEAD),
        (annotator, Role.ANNOTATOR),
        (researcher, Role.RESEARCHER),
    ]:
        Membership.objects.create(project=project, user=user, role=role)
    project.citation_authors = "Lovelace, Ada\nHopper, Grace Brewster\nThe Study Group"
    project.description = "Issues of LLM frameworks, labeled with the study's taxonomy."
    project.save()
    return project


@pytest.fixture
def study(taxonomy_version, lead, annotator, researcher, outsider):
    import_labels("Study", SAMPLES)
    return _members(Project.objects.get(name="Study"), lead, annotator, researcher)


@pytest.fixture(scope="module")
def small_study_id(module_db) -> int:
    """MindSpeed's sample imported once for the module (module_db): each test runs in a
    savepoint, so its releases and edits go with it. Comes after the test of `study`, which
    imports the samples into a project of the same name."""

    def build() -> int:
        import_labels("Study", [MINDSPEED])
        return Project.objects.get(name="Study").pk

    return module_db(build)


@pytest.fixture
def small_study(small_study_id, db, lead, annotator, researcher, outsider):
    cache.clear()  # the same project id in every test
    return _members(Project.objects.get(pk=small_study_id), lead, annotator, researcher)


def release(project: Project, user, version: str, note: str = "") -> Release:
    made = create_release(project, user, version, note)
    return build_release(made.pk)


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def unpack(path: Path, target: Path) -> Path:
    with zipfile.ZipFile(path) as zf:
        zf.extractall(target)
    return target


def csv_rows(data: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"))))


# -- what a release holds ----------------------------------------------------------------------


@pytest.mark.slow  # frictionless and mlcroissant read the whole release
def test_a_release_of_the_samples_validates_as_a_data_package_and_croissant(
    study, lead, export_root, tmp_path
):
    import frictionless
    import mlcroissant

    made = release(study, lead, "1.0.0", "First public release.")
    assert made.status == Release.Status.DONE and made.version == "1.0.0"
    files = members(release_path(made))
    assert hashlib.sha256(release_path(made).read_bytes()).hexdigest() == made.sha256
    for name in (
        "labels/Megatron-LM.csv",
        "labels/MindSpeed.csv",
        "final_labels.csv",
        "issues.jsonl",
        "changes.csv",
        "datapackage.json",
        "croissant.json",
        "CITATION.cff",
        "DATASHEET.md",
        "manifest.json",
    ):
        assert name in files, name
    # The study's CSVs are the published ones, row for row.
    assert [list(r.values()) for r in csv_rows(files["labels/Megatron-LM.csv"])] == read_rows(
        SAMPLES[0]
    )[1:]
    manifest = json.loads(files["manifest.json"])
    for entry in manifest["files"]:
        assert hashlib.sha256(files[entry["name"]]).hexdigest() == entry["sha256"]
    assert {e["name"] for e in manifest["files"]} == set(files) - {"manifest.json"}

    directory = unpack(release_path(made), tmp_path / "unpacked")
    report = frictionless.validate(str(directory / "datapackage.json"))
    assert report.valid, [
        (t.name, t.flatten(["rowNumber", "type", "note"])[:3]) for t in report.tasks
    ]
    # The data were read against the schemas: every table, every row.
    rows = {task.name: task.stats.get("rows") for task in report.tasks}
    assert rows["labels-megatron-lm"] == 1114 and rows["labels-mindspeed"] == 80
    assert rows["final-labels"] == 1194 and rows["issues"] == 1194

    package = json.loads(files["datapackage.json"])
    labels = next(r for r in package["resources"] if r["path"] == "labels/MindSpeed.csv")
    final_field = next(f for f in labels["schema"]["fields"] if f["name"] == "Final_Label")
    enum = final_field["constraints"]["enum"]
    assert {"A", "C.5", "C.5.i", "FP"} <= set(enum)
    assert set(enum) - {"FP"} <= set(
        TaxonomyNode.objects.filter(version=study.taxonomy_version).values_list("code", flat=True)
    )

    dataset = mlcroissant.Dataset(jsonld=directory / "croissant.json")
    finals = list(dataset.records("final-labels"))
    assert len(finals) == 1194
    assert {r["final-labels/final_label"].decode() for r in finals} <= set(enum)

    citation = yaml.safe_load(files["CITATION.cff"])
    # What `cffconvert --validate` checks: the CFF 1.2.0 JSON Schema (tests/data/cff/README.md).
    cff_schema = json.loads((CFF_SCHEMA).read_text(encoding="utf-8"))
    jsonschema.validate(citation, cff_schema)
    assert citation["cff-version"] == "1.2.0" and citation["version"] == "1.0.0"
    assert citation["title"] == "Study" and citation["license"] == "CC-BY-4.0"
    assert citation["authors"][:2] == [
        {"family-names": "Lovelace", "given-names": "Ada"},
        {"family-names": "Hopper", "given-names": "Grace Brewster"},
    ]
    assert citation["authors"][2] == {"name": "The Study Group"}
    assert str(citation["date-released"]) == made.finished_at.date().isoformat()

    sheet = files["DATASHEET.md"].decode()
    for heading in (
        "## Sources and time windows",
        "## The keyword filter",
        "### Estimated recall of the filter",
        "## Annotation process",
        "## Agreement",
        "## Known limitations",
        "## Changes from the previous release",
    ):
        assert heading in sheet, heading
    assert "NVIDIA/Megatron-LM" in sheet and "This is the first release." in sheet
    assert "K = 7" in sheet or "K = " in sheet
    # The reference figures of the two sample repositories (shared/README.md), per type.
    assert "0.924" in sheet and "0.757" in sheet and "0.753" in sheet
    # The first release's changes.csv is its header alone.
    assert files["changes.csv"].decode().strip().split(",")[0] == "change"
    assert len(files["changes.csv"].decode().strip().splitlines()) == 1
    assert made.counts["issues"] == 1194 and made.taxonomy_version == study.taxonomy_version
    kappas = {
        (row["type"], row["level"]): row["fleiss_kappa"]
        for row in made.agreement
        if row["level"] == "theme"
    }
    assert round(kappas[("Question", "theme")], 6) == 0.923582


def test_the_data_package_notices_a_tampered_file(small_study, lead, export_root, tmp_path):
    """The probe can fire: a changed label cell fails the schema and the checksum."""
    import frictionless

    made = release(small_study, lead, "0.1.0")
    directory = unpack(release_path(made), tmp_path / "unpacked")
    target = directory / "labels" / "MindSpeed.csv"
    text = target.read_text(encoding="utf-8-sig")
    first_data_line = text.splitlines()[1]
    target.write_text(
        "\ufeff" + text.replace(first_data_line, first_data_line.rsplit(",", 1)[0] + ",Z.99", 1),
        encoding="utf-8",
    )
    report = frictionless.validate(str(directory / "datapackage.json"))
    assert not report.valid
    kinds = {error[0] for error in report.flatten(["type"])}
    assert "constraint-error" in kinds and "hash-count" in kinds


# -- immutability and the diff -----------------------------------------------------------------


def test_a_label_changed_after_a_release_changes_nothing_in_it_and_shows_in_the_next(
    small_study, lead, export_root
):
    first = release(small_study, lead, "1.0.0")
    path = release_path(first)
    before = path.read_bytes()

    resolution = Resolution.objects.filter(project=small_study, is_current=True).order_by("pk")[0]
    old_code = resolution.label_code
    new_theme = TaxonomyNode.objects.get(version=small_study.taxonomy_version, code="A.1")
    if old_code == "A.1":
        new_theme = TaxonomyNode.objects.get(version=small_study.taxonomy_version, code="B.1")
    resolution.is_current = False
    resolution.save()
    Resolution.objects.create(
        project=small_study,
        issue=resolution.issue,
        method=Resolution.Method.LEAD_DECISION,
        decided_by=lead,
        issue_type=new_theme.parent,
        theme=new_theme,
        is_false_positive=False,
    )

    # Building the first release again does nothing; its file and checksums are as they were.
    build_release(first.pk)
    first.refresh_from_db()
    assert path.read_bytes() == before and verify_release(first) == []
    assert hashlib.sha256(before).hexdigest() == first.sha256

    second = release(small_study, lead, "1.1.0", "Relabeled one issue.")
    files = members(release_path(second))
    changes = csv_rows(files["changes.csv"])
    assert changes == [
        {
            "change": "label_changed",
            "issue_url": resolution.issue.url,
            "repository": "ascend/MindSpeed",
            "old_label": old_code,
            "new_label": new_theme.code,
            "resolution_method": "lead_decision",
            "decided_by": Membership.objects.get(project=small_study, user=lead).pseudonym
            or f"annotator-{lead.pk}",
            "decided_at": changes[0]["decided_at"],
            "detail": "",
        }
    ]
    assert changes[0]["decided_at"]
    assert "Since 1.0.0: 0 issues added, 0 removed, 1 final labels changed" in (
        files["DATASHEET.md"].decode()
    )
    # The first release is still the one it was.
    assert release_path(first).read_bytes() == before


def test_a_done_release_refuses_changes_and_its_file_is_never_overwritten(
    small_study, lead, export_root
):
    made = release(small_study, lead, "1.0.0")
    made.note = "rewritten"
    with pytest.raises(FrozenReleaseError, match="note"):
        made.save()
    made.refresh_from_db()
    made.sha256 = "0" * 64
    with pytest.raises(FrozenReleaseError, match="sha256"):
        made.save()
    made.refresh_from_db()
    with pytest.raises(FrozenReleaseError):
        made.delete()
    # A row pointing at the same file (a forged retry) fails instead of replacing the file.
    before = release_path(made).read_bytes()
    Release.objects.filter(pk=made.pk).update(status=Release.Status.PENDING)
    with pytest.raises(FileExistsError):
        build_release(made.pk)
    assert release_path(made).read_bytes() == before


# -- versions ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "version", ["1.0", "v1.0.0", "1.0.0-beta", "01.0.0", "1.0.0.0", "", "a.b.c"]
)
def test_a_version_that_is_not_semver_is_refused_naming_the_field(small_study, lead, version):
    with pytest.raises(Refusal) as error:
        create_release(small_study, lead, version)
    assert error.value.field == "version"
    assert not Release.objects.exists()


def test_a_version_must_be_greater_than_the_latest(small_study, lead, export_root):
    release(small_study, lead, "1.2.0")
    for version in ("1.2.0", "1.1.9", "0.9.0"):
        with pytest.raises(Refusal, match=r"not greater than the latest release, 1\.2\.0"):
            create_release(small_study, lead, version)
    assert create_release(small_study, lead, "1.10.0").version == "1.10.0"
    # While one is being built, no other may start.
    with pytest.raises(Refusal, match="being built"):
        create_release(small_study, lead, "2.0.0")


def test_the_command_releases_synchronously(small_study, lead, export_root):
    out = io.StringIO()
    call_command(
        "release", "--project", "Study", "--version", "1.0.0", "--note", "From the CLI", stdout=out
    )
    made = Release.objects.get()
    assert made.status == Release.Status.DONE and made.note == "From the CLI"
    assert made.sha256 in out.getvalue()
    with pytest.raises(CommandError, match="version"):
        call_command("release", "--project", "Study", "--version", "1.0.0", stdout=io.StringIO())
    with pytest.raises(CommandError, match="project"):
        call_command("release", "--project", "Nope", "--version", "2.0.0", stdout=io.StringIO())


def test_the_citation_schema_check_can_fail():
    """The probe can fire: a CITATION.cff without authors, or with a made-up key, is refused."""
    schema = json.loads(CFF_SCHEMA.read_text(encoding="utf-8"))
    good = {
        "cff-version": "1.2.0",
        "message": "cite",
        "title": "T",
        "authors": [{"family-names": "Lovelace", "given-names": "Ada"}],
    }
    jsonschema.validate(good, schema)
    for bad in ({**good, "authors": []}, {**good, "licence": "x"}, {**good, "version": [1]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_the_datasheet_reports_a_measured_recall(small_study, lead, export_root, monkeypatch):
    """With a recall sample (dataset.recall's summary), the datasheet gives the estimate, its
    interval per repository and the suggested keywords; without one it says "not measured"."""
    summary = {
        "sample_size": 120,
        "labeled": 100,
        "llm_related": 7,
        "dropped_total": 4000,
        "share": (0.07, 0.0343, 0.1375),
        "recall": (0.8123, 0.6951, 0.8912),
        "by_repository": [
            {
                "repository": "ascend/MindSpeed",
                "sample_size": 120,
                "labeled": 100,
                "llm_related": 7,
                "share": (0.07, 0.0343, 0.1375),
                "recall": (0.8123, 0.6951, 0.8912),
            }
        ],
        "suggested_keywords": ["rlhf", "vllm"],
    }
    first = release(small_study, lead, "1.0.0")
    sheet = members(release_path(first))["DATASHEET.md"].decode()
    assert "Not measured" in sheet
    monkeypatch.setattr("dataset.datasheet.recall", lambda project: summary)
    second = release(small_study, lead, "1.0.1")
    sheet = members(release_path(second))["DATASHEET.md"].decode()
    assert "Not measured" not in sheet
    assert "0.812 (95 % CI 0.695-0.891)" in sheet and "0.070 (95 % CI 0.034-0.138)" in sheet
    assert "| ascend/MindSpeed | 120 | 100 | 7 |" in sheet
    assert "`rlhf`, `vllm`" in sheet
    assert "The keyword filter's recall was not measured" not in sheet


def test_a_taxonomy_merge_between_releases_is_listed_with_the_labels_it_moved(
    small_study, lead, export_root
):
    first = release(small_study, lead, "1.0.0")
    version = small_study.taxonomy_version
    finals = csv_rows(members(release_path(first))["final_labels.csv"])
    # Merge the most used theme of the sample into another theme of its type.
    used = Counter(r["theme"] for r in finals if r["theme"])
    source_code = used.most_common(1)[0][0]
    source = TaxonomyNode.objects.get(version=version, code=source_code)
    target = source.parent.children.exclude(pk=source.pk).order_by("position")[0]
    edits.merge(small_study, lead, source, target)
    small_study.refresh_from_db()
    assert small_study.taxonomy_version != version

    second = release(small_study, lead, "2.0.0")
    assert second.taxonomy_version == small_study.taxonomy_version
    changes = csv_rows(members(release_path(second))["changes.csv"])
    merged = [c for c in changes if c["change"] == "taxonomy_merged"]
    assert len(merged) == 1 and source_code in merged[0]["old_label"]
    moved = [c for c in changes if c["change"] == "label_changed" and c["old_label"] == source_code]
    assert len(moved) == used[source_code]
    # The decision behind them did not change: the change is the taxonomy's.
    assert {c["detail"] for c in moved} == {"same resolution, read under the new taxonomy version"}
    assert {c["resolution_method"] for c in moved} == {"imported"}


def test_the_diff_of_two_label_files_names_what_was_added_removed_and_relabeled(taxonomy_version):
    def row(url: str, label: str, method: str = "majority", at: str = "2026-01-01") -> dict:
        return {
            "issue_url": url,
            "repository": "o/r",
            "final_label": label,
            "resolution_method": method,
            "decided_by": "rater-1",
            "decided_at": at,
        }

    old = {u: row(u, code) for u, code in [("u1", "A.1"), ("u2", "B.1"), ("u3", "C.1")]}
    new = {
        "u1": row("u1", "A.1"),  # unchanged
        "u2": row("u2", "B.2", "lead_decision", "2026-02-01"),  # a new decision
        "u4": row("u4", "C.2"),  # added; u3 removed
    }
    diff = diff_labels(old, new, "1.0.0", "1.1.0", taxonomy_version, taxonomy_version)
    assert [r["issue_url"] for r in diff.added] == ["u4"]
    assert [r["issue_url"] for r in diff.removed] == ["u3"]
    assert [(c.issue_url, c.old, c.new, c.method, c.cause) for c in diff.changed] == [
        ("u2", "B.1", "B.2", "lead_decision", "resolution")
    ]
    assert diff.taxonomy is None and not diff.is_empty
    out = io.StringIO()
    assert write_changes(diff, out) == 3
    kinds = [r["change"] for r in csv.DictReader(io.StringIO(out.getvalue()))]
    assert kinds == ["issue_added", "issue_removed", "label_changed"]
    assert diff_labels(old, old, "1.0.0", "1.0.1").is_empty
