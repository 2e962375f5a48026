"""A release loads in the tools researchers use (#21): Rita (researcher) downloads the lead's
release and reads every record set of its `croissant.json` with mlcroissant, and its JSON Lines
and CSVs with HuggingFace `datasets`, offline.

Expected counts come from the published sample file the release was built from
(`tests/data/sample-labels/MindSpeed.csv`), never from the release code.
"""

from __future__ import annotations

import json
import zipfile

import pytest

from dataset.releases import release_path
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


def test_the_release_files_load_with_huggingface_datasets_offline(unpacked, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    from datasets import load_dataset

    cache = str(tmp_path / "hf-cache")
    issues = load_dataset(
        "json", data_files=str(unpacked / "issues.jsonl"), split="train", cache_dir=cache
    )
    assert set(issues["url"]) == published_urls()
    assert {"title", "annotations", "resolution"} <= set(issues.column_names)
    csvs = sorted(p for p in unpacked.rglob("*.csv") if p.stat().st_size > 0)
    assert len(csvs) >= 4
    for path in csvs:
        if len(read_rows(path)) == 1:
            continue  # a header alone (no change since no previous release): no rows to load
        table = load_dataset("csv", data_files=str(path), split="train", cache_dir=cache)
        header = read_rows(path)[0]
        assert table.column_names == header, path.name
        assert table.num_rows == len(read_rows(path)) - 1, path.name
    finals = load_dataset(
        "csv", data_files=str(unpacked / "final_labels.csv"), split="train", cache_dir=cache
    )
    assert set(finals["issue_url"]) == published_urls()
