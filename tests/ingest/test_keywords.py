"""The keyword filter: token boundaries, the study's lists as data, kept-and-marked issues."""

from __future__ import annotations

import pytest

from ingest.filtering import refilter_repository
from ingest.keywords import (
    KeywordFileError,
    compile_keywords,
    parse_keyword_file,
    study_keyword_lists,
)
from ingest.models import Issue, KeywordSet
from ingest.runs import start_sync
from ingest.steps import run_inline


@pytest.mark.parametrize(
    ("keywords", "text", "expected"),
    [
        (["yi"], "the generator should yield", []),
        (["yi"], "Yi-34B OOM on 8 GPUs", ["yi"]),
        (["opt"], "an option to disable it", []),
        (["opt"], "OPT-13b loads slowly", ["opt"]),
        (["OPT"], "adopt the new api", []),
        (["torch.distributed"], "import torch.distributed as dist", ["torch.distributed"]),
        (["torch.distributed"], "torchXdistributed", []),
        (["flash_attn_2"], "attn_implementation=flash_attn_2)", ["flash_attn_2"]),
        (["flash_attn_2"], "flash_attn_20", []),
        (["flash_attn_2"], "my_flash_attn_2", []),
        (["large language model"], "a Large\n  Language Model run", ["large language model"]),
        (["llm", "LLM"], "LLM serving; llm.generate", ["llm"]),
        (["gpt", "gpt-j"], "gpt-j and gpt2 and GPT", ["gpt-j", "gpt"]),
        (["int8 quant"], "INT8 QUANT fails", ["int8 quant"]),
        ([], "anything", []),
    ],
)
def test_token_boundaries(keywords, text, expected):
    assert compile_keywords(keywords).matches(text) == expected


def test_study_lists_parse_as_data_not_code(tmp_path):
    lists = study_keyword_lists()
    assert len(set(lists["mindspore_keywords"])) == 84
    assert "torch.distributed" in lists["pytorch_keywords"]
    with pytest.raises(KeywordFileError, match="line 2"):
        parse_keyword_file("a = ['x']\nb = [__import__('os').system('touch boom')]\n")
    with pytest.raises(KeywordFileError, match="line 1"):
        parse_keyword_file("import os\n")
    assert not (tmp_path / "boom").exists()


def test_default_sets_ship_for_the_three_frameworks(db):
    # Migration 0003's loader (run again: a transactional test elsewhere may flush the table).
    import importlib

    from django.apps import apps

    importlib.import_module("ingest.migrations.0003_default_keyword_sets").load(apps, None)
    sets = {k.name: k for k in KeywordSet.objects.all()}
    assert {"PyTorch", "MindSpore", "TensorFlow"} <= set(sets)
    assert sets["MindSpore"].default_for_group == "MindSpore"


def test_framework_issues_are_filtered_kept_and_refiltered_without_refetch(fake, make_repo):
    forge, repo = make_repo("github", "pytorch", "pytorch", group="PyTorch", is_framework=True)
    forge.add_issue(1, "FSDP hangs with torch.distributed", created="2024-01-01T00:00:01Z")
    forge.add_issue(2, "Tensor printing is slow", created="2024-01-01T00:00:02Z")
    forge.add_issue(3, "yield inside a generator", labels=["llama"], created="2024-01-01T00:00:03Z")
    run = run_inline(start_sync(repo, enqueue=False))
    assert (run.filtered_in, run.filtered_out) == (2, 1)
    by_number = {i.number: i for i in Issue.objects.filter(repository=repo)}
    assert by_number["1"].filter_status == "kept"
    assert by_number["1"].matched_keywords == ["FSDP", "torch.distributed"]
    assert by_number["2"].filter_status == "filtered_out"  # kept in the database, marked
    assert by_number["3"].matched_keywords == ["llama"]  # forge labels count

    # The lead edits the set: re-filtering needs no request to the forge.
    fake.reset_counts()
    pytorch = KeywordSet.objects.get(name="PyTorch")
    pytorch.keywords = [*pytorch.keywords, "printing"]
    pytorch.save()
    counts = refilter_repository(repo)
    assert fake.count() == 0
    assert counts == {"kept": 3, "filtered_out": 0, "not_filtered": 0, "changed": 1}
    assert Issue.objects.get(repository=repo, number="2").matched_keywords == ["printing"]


def test_toolkit_repositories_keep_every_issue(fake, make_repo):
    forge, repo = make_repo("github", "vllm-project", "vllm", group="PyTorch", is_framework=False)
    forge.add_issue(1, "Tensor printing is slow")
    run_inline(start_sync(repo, enqueue=False))
    assert Issue.objects.get(repository=repo).filter_status == "not_filtered"


def test_the_token_prefilter_never_changes_the_result():
    """The prefilter skips texts the regex would not match; compare with the regex alone."""
    import random

    words = study_keyword_lists()["pytorch_keywords"]
    matcher = compile_keywords(words)
    pieces = [*words, "yield", "option", "models", "torchrun2", "x", "_", ".", "-", " ", "\n",
              "\uff0c", "大模型", "é", "LLM的", "(", ")", "flash_attn_20",
              "Torch.Distributed"]  # fmt: skip
    rng = random.Random(3)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) + rng.choice(["", " ", "-", ".", "_"]) for _ in range(8))
        expected = []
        for m in matcher.pattern.finditer(text):
            keyword = matcher.canonical[" ".join(m.group(0).split()).casefold()]
            if keyword not in expected:
                expected.append(keyword)
        assert matcher.matches(text) == expected, text
