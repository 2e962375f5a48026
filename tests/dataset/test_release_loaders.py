"""A release loads in the tools researchers use (#21, #28): Rita (researcher) downloads the
lead's release and reads every record set of its `croissant.json` with mlcroissant, every table
with HuggingFace `datasets` (offline) through the configs of its dataset card (`README.md`), and
`datapackage.json` with frictionless. A table without rows (`machine_labels.csv` without a
machine rater, `changes.csv` of a first release) is described by datapackage.json and
croissant.json but is no HuggingFace config, since `load_dataset` refuses a file without data;
once it has rows (a rater labeled issues, a label changed before the next release) it is one.

Expected counts come from the published sample file the release was built from
(`tests/data/sample-labels/MindSpeed.csv`) or from the files themselves read with the csv
module, never from the release code.
"""

from __future__ import annotations

import json
import zipfile

import pytest
import yaml

from dataset.releases import release_path
from labeling import resolution as labeling_resolution
from labeling import submission
from labeling.models import MachineLabel, MachineRater, ProjectIssue, Resolution
from tests.builders import label_data
from tests.dataset.helpers import MINDSPEED, read_rows
from tests.dataset.test_releases import (  # noqa: F401 (fixtures)
    release,
    small_study,
    small_study_id,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def unpacked(small_study, lead, export_root, tmp_path):  # noqa: F811
    made = release(small_study, lead, "1.0.0")
    with zipfile.ZipFile(release_path(made)) as zf:
        zf.extractall(tmp_path / "release")
    return tmp_path / "release"


def published_urls() -> set[str]:
    return {row[0] for row in read_rows(MINDSPEED)[1:]}


def test_every_croissant_record_set_loads_with_mlcroissant(unpacked):
    import mlcroissant

    metadata = json.loads((unpacked / "croissant.json").read_text(encoding="utf-8"))
    names = [r["name"] for r in metadata["recordSet"]]
    assert "issues" in names and "final-labels" in names and len(names) >= 5
    dataset = mlcroissant.Dataset(jsonld=unpacked / "croissant.json")
    loaded = {}
    for record_set in metadata["recordSet"]:
        name = record_set["name"]
        loaded[name] = list(dataset.records(name))
        # As many records as the file has rows (lines for the JSON Lines, rows for a CSV).
        path = unpacked / record_set["field"][0]["source"]["fileObject"]["@id"]
        if path.suffix == ".jsonl":
            expected = len(path.read_text(encoding="utf-8").splitlines())
        else:
            expected = len(read_rows(path)) - 1
        assert len(loaded[name]) == expected, name
    urls = {r["issues/url"].decode() for r in loaded["issues"]}
    assert urls == published_urls()
    assert {r["final-labels/issue_url"].decode() for r in loaded["final-labels"]} == urls
    # The JSON Lines' scalar fields come through, typed.
    first = loaded["issues"][0]
    assert isinstance(first["issues/is_pilot"], bool)
    assert first["issues/repository"].decode() == "ascend/MindSpeed"


@pytest.fixture
def offline_hf(monkeypatch, tmp_path) -> str:
    """HuggingFace `datasets` offline, with its caches in the test's directory; the cache dir."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    return str(tmp_path / "hf-cache")


def card_configs(directory) -> list[dict]:
    """The `configs` of the release's dataset card (its YAML front matter)."""
    text = (directory / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])["configs"]


def tables(directory) -> dict[str, int]:
    """Every table of the release (CSV or JSON Lines) and its data rows, read with the csv
    module (a CSV without even a header counts as no table)."""
    out = {}
    for path in sorted(directory.rglob("*")):
        name = path.relative_to(directory).as_posix()
        if path.suffix == ".jsonl":
            out[name] = len(
                [line for line in path.read_text(encoding="utf-8").splitlines() if line]
            )
        elif path.suffix == ".csv" and read_rows(path):
            out[name] = len(read_rows(path)) - 1
    return out


def test_the_release_files_load_with_huggingface_datasets_offline(unpacked, offline_hf):
    from datasets import load_dataset

    issues = load_dataset(
        "json", data_files=str(unpacked / "issues.jsonl"), split="train", cache_dir=offline_hf
    )
    assert set(issues["url"]) == published_urls()
    assert {"title", "annotations", "resolution"} <= set(issues.column_names)
    # The card's default config is the final labels.
    finals = load_dataset(str(unpacked), split="train", cache_dir=offline_hf)
    assert set(finals["issue_url"]) == published_urls()
    assert finals.column_names == read_rows(unpacked / "final_labels.csv")[0]


def check_every_loader(directory, cache_dir: str) -> None:
    """HuggingFace datasets loads every config of the card, the configs are exactly the CSV
    tables with rows, and the JSON Lines load with the json builder; frictionless validates
    every table; mlcroissant yields every record set, as many records as its file has rows; the
    empty tables are still described."""
    import frictionless
    import mlcroissant
    from datasets import load_dataset

    found = tables(directory)
    configs = card_configs(directory)
    by_file = {c["data_files"][0]["path"]: c["config_name"] for c in configs}
    assert len(by_file) == len(configs) == len({c["config_name"] for c in configs})
    assert set(by_file) == {name for name, rows in found.items() if rows and name.endswith(".csv")}
    assert [c["config_name"] for c in configs if c.get("default")] == ["final-labels"]
    for path, config in by_file.items():
        table = load_dataset(str(directory), config, split="train", cache_dir=cache_dir)
        assert table.num_rows == found[path], path
        if path.endswith(".csv"):
            assert table.column_names == read_rows(directory / path)[0], path
    issues = load_dataset(
        "json", data_files=str(directory / "issues.jsonl"), split="train", cache_dir=cache_dir
    )
    assert issues.num_rows == found["issues.jsonl"]
    empty = {name for name, rows in found.items() if not rows}
    for name in empty:  # named in the card's text as empty
        assert f"- `{name}`: " in (directory / "README.md").read_text(encoding="utf-8")
        # Why it is no config: `datasets` refuses a file without data (#28).
        with pytest.raises(ValueError, match="corresponds to no data"):
            load_dataset("csv", data_files=str(directory / name), cache_dir=cache_dir)

    report = frictionless.validate(str(directory / "datapackage.json"))
    assert report.valid, [
        (t.name, t.flatten(["rowNumber", "type", "note"])[:3]) for t in report.tasks
    ]
    package = json.loads((directory / "datapackage.json").read_text(encoding="utf-8"))
    described = {r["path"]: r for r in package["resources"]}
    assert set(found) <= set(described)
    for name in empty:
        assert [f["name"] for f in described[name]["schema"]["fields"]] == read_rows(
            directory / name
        )[0]

    metadata = json.loads((directory / "croissant.json").read_text(encoding="utf-8"))
    dataset = mlcroissant.Dataset(jsonld=directory / "croissant.json")
    sets = {}
    for record_set in metadata["recordSet"]:
        path = record_set["field"][0]["source"]["fileObject"]["@id"]
        sets[path] = len(list(dataset.records(record_set["name"])))
    assert sets == found


@pytest.mark.slow  # every loader reads every table of two releases
def test_every_loader_reads_a_release_with_empty_tables_and_one_without(
    small_study,  # noqa: F811 (the fixture imported above)
    lead,
    export_root,
    offline_hf,
    tmp_path,
):
    """Release 1.0.0: no machine rater and no previous release, so machine_labels.csv and
    changes.csv hold their header alone. Then a rater labels five final issues and the lead
    relabels one: in release 1.1.0 both tables have rows."""
    first = release(small_study, lead, "1.0.0")
    rater = MachineRater.objects.create(project=small_study, name="keywords", kind="classifier")
    finals = list(
        Resolution.objects.filter(project=small_study, is_current=True)
        .select_related("issue_type", "theme")
        .order_by("pk")[:5]
    )
    MachineLabel.objects.bulk_create(
        MachineLabel(
            rater=rater,
            issue_id=final.issue_id,
            issue_type=final.issue_type,
            theme=final.theme,
            is_false_positive=final.is_false_positive,
            model="tfidf-logreg",
            confidence=0.8,
            fold=0,
        )
        for final in finals
    )
    changed = finals[0]
    item = ProjectIssue.objects.get(project=small_study, issue_id=changed.issue_id)
    labeling_resolution.reopen(item, lead)
    target = "B.1" if changed.label_code != "B.1" else "A.1"
    label = submission.parse_label(small_study, label_data(small_study, target))
    labeling_resolution.resolve(item, lead, label, Resolution.Method.LEAD_DECISION)
    second = release(small_study, lead, "1.1.0")

    directories = []
    for made in (first, second):
        with zipfile.ZipFile(release_path(made)) as zf:
            zf.extractall(tmp_path / made.version)
        directories.append(tmp_path / made.version)
    before, after = (tables(d) for d in directories)
    # The probe: the first release has the two empty tables, the second fills them.
    assert before["machine_labels.csv"] == 0 and before["changes.csv"] == 0
    assert after["machine_labels.csv"] == 5 and after["changes.csv"] == 1
    for directory in directories:
        check_every_loader(directory, offline_hf)
