"""`manage.py sync SPEC --wait` against the fake forge prints the run's figures."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from ingest.models import Issue, Repository


def test_sync_wait_prints_figures(fake, study_keyword_sets, capsys):
    forge = fake.repo("gitee", "ascend", "MindSpeed")
    for i in range(45):
        forge.add_issue(f"IA{i:04d}", created=f"2024-02-01T00:00:{i:02d}Z", comments=1)
    call_command(
        "sync", "gitee:ascend/MindSpeed", "--api-url", fake.api_url("gitee"),
        "--since", "2024-01-01", "--keyword-set", "MindSpore", "--wait",
    )  # fmt: skip
    out = capsys.readouterr().out
    assert "issues_new: 45" in out and "status: done" in out and "requests: 2" in out
    repo = Repository.objects.get(forge="gitee", owner="ascend", name="MindSpeed")
    assert repo.is_framework and repo.keyword_set.name == "MindSpore"
    assert Issue.objects.filter(repository=repo, filter_status="filtered_out").count() == 45


def test_sync_rejects_a_bad_spec_and_unknown_set(db):
    with pytest.raises(CommandError, match="expected github:owner/name"):
        call_command("sync", "bitbucket:a/b")
    with pytest.raises(CommandError, match="no set 'Nope'"):
        call_command("sync", "github:a/b", "--keyword-set", "Nope")
    with pytest.raises(CommandError, match="--since"):
        call_command("sync", "github:a/b", "--since", "yesterday")
