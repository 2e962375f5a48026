"""The study's per-year URL lists: imported, with bad lines named by file and line."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from ingest.hydration import hydrate_issue, hydrate_issues
from ingest.models import Comment, Issue, Repository, SyncRun
from ingest.urllists import import_refs, parse_files

LISTS = Path(__file__).parent / "data" / "url-lists"  # the study's lists, copied
GITEE_URLS = sum(
    1 for p in LISTS.glob("MindSpeed_*.txt") for line in p.read_text().splitlines() if line.strip()
)


@pytest.mark.slow  # the study's full URL lists, every line
def test_the_study_lists_import_with_gitee_alphanumeric_numbers(db, capsys):
    files = sorted(LISTS.glob("*.txt"))  # MindSpeed_2023.txt is empty, as published
    call_command("import_issue_urls", *map(str, files), "--no-fetch")
    assert Issue.objects.count() == 1194
    assert Issue.objects.filter(repository__forge="gitee").count() == GITEE_URLS
    assert Issue.objects.filter(number="IBD6YU", repository__name="MindSpeed").exists()
    assert Repository.objects.filter(forge="gitee", owner="ascend", name="MindSpeed").exists()
    assert Issue.objects.filter(fetched_at__isnull=True).count() == 1194  # to be hydrated
    assert "1194 issue URLs (0 repeated), 1194 new issues, 2 new repositories" in (
        capsys.readouterr().out
    )
    call_command("import_issue_urls", *map(str, files), "--no-fetch")  # again: nothing new
    assert Issue.objects.count() == 1194


def test_bad_lines_are_reported_with_file_and_line_and_nothing_is_imported(db, tmp_path, capsys):
    good = tmp_path / "Megatron-LM_2024.txt"
    good.write_bytes(
        b"https://github.com/NVIDIA/Megatron-LM/issues/1341\r\n"
        b"\r\n"
        b"   https://github.com/NVIDIA/Megatron-LM/issues/1340  \r\n"
        b"https://github.com/NVIDIA/Megatron-LM/issues/1341\r\n"
    )
    bad = tmp_path / "mixed.txt"
    bad.write_text(
        "https://gitee.com/ascend/MindSpeed/issues/IBX3GM\n"
        "https://bitbucket.org/a/b/issues/3\n"
        "github.com/NVIDIA/Megatron-LM/issues/1\n"
        "https://github.com/NVIDIA/Megatron-LM/pull/12\n"
    )
    empty = tmp_path / "MindSpeed_2023.txt"
    empty.write_text("")
    with pytest.raises(CommandError, match="3 bad line"):
        call_command("import_issue_urls", str(good), str(bad), str(empty), "--no-fetch")
    err = capsys.readouterr().err
    assert f"{bad}, line 2: unknown host 'bitbucket.org'" in err
    assert f"{bad}, line 3: not an issue URL" in err
    assert f"{bad}, line 4: not a github issue URL" in err
    assert Issue.objects.count() == 0

    call_command("import_issue_urls", str(good), str(bad), str(empty), "--no-fetch", "--skip-bad")
    assert sorted(Issue.objects.values_list("number", flat=True)) == ["1340", "1341", "IBX3GM"]
    result = parse_files([good])
    assert (len(result.refs), result.duplicates) == (2, 1)


def test_hydration_fetches_issue_and_comments_records_moves_and_deletions(fake, make_repo):
    forge, repo = make_repo("github", "NVIDIA", "Megatron-LM")
    forge.add_issue(648, "Pipeline hangs", comments=2)
    forge.add_issue(649, "Old place")
    forge.issues["649"].moved_to = "/repos/NVIDIA/Megatron-LM/issues/648"
    forge.add_issue(650, "Gone")
    forge.issues["650"].deleted = True
    issues = {
        n: Issue.objects.create(repository=repo, number=n, url=f"{repo.web_url}/issues/{n}")
        for n in ("648", "649", "650")
    }
    hydrate_issue(issues["648"])
    issues["648"].refresh_from_db()
    assert issues["648"].title == "Pipeline hangs" and issues["648"].fetched_at
    assert Comment.objects.filter(issue=issues["648"]).count() == 2
    moved = hydrate_issue(issues["649"])
    assert moved.raw["moved_to"].endswith("/issues/648") and Issue.objects.count() == 3
    assert hydrate_issue(issues["650"]).state == "deleted"


def test_hydrating_a_url_list_is_recorded_as_a_run_per_repository(fake, make_repo, settings):
    forge, megatron = make_repo("github", "NVIDIA", "Megatron-LM")
    for n in (1340, 1341, 1342):
        forge.add_issue(n, f"Issue {n}", comments=2)
    forge.add_issue(1343, "Gone")
    forge.issues["1343"].deleted = True
    gitee, mindspeed = make_repo("gitee", "ascend", "MindSpeed")
    gitee.add_issue("IBD6YU", "NPU out of memory", comments=1)
    known = [
        Issue.objects.create(repository=repo, number=n, url=f"{repo.web_url}/issues/{n}")
        for repo, n in [(megatron, "1340"), (megatron, "1341"), (megatron, "1342"),
                        (megatron, "1343"), (megatron, "9999"), (mindspeed, "IBD6YU")]
    ]  # fmt: skip
    # Rate limited after two requests: the runs wait, and the rest comes back later.
    fake.set_quota("github", limit=2, window=60)
    first = hydrate_issues([i.pk for i in known])
    waiting = SyncRun.objects.get(repository=megatron)
    assert first.wait_until is not None and len(first.rest) == 5
    assert (waiting.kind, waiting.status, waiting.pages, waiting.pages_estimate) == (
        "hydrate", "waiting", 1, 5,
    )  # fmt: skip
    assert waiting.percent == 20 and "rate limited" in waiting.errors[-1]["message"]

    fake.set_quota("github", limit=100, window=60)
    second = hydrate_issues(first.rest, first.run_ids)
    assert second.wait_until is None and sorted(second.run_ids) == sorted(first.run_ids)
    done = SyncRun.objects.get(repository=megatron)
    assert (done.status, done.pages, done.percent) == ("done", 5, 100)
    assert (done.issues_seen, done.issues_new, done.comments_seen) == (4, 3, 6)
    assert done.requests == fake.count("/github/") and done.rate_limit_waits == 1
    messages = [e["message"] for e in done.errors]
    assert any(m.startswith("#9999 not fetched: 404") for m in messages)
    assert "#1343 deleted on the forge (410)" in messages
    other = SyncRun.objects.get(repository=mindspeed)
    assert (other.kind, other.status, other.pages, other.comments_seen) == ("hydrate", "done", 1, 1)
    assert Comment.objects.filter(issue__repository=megatron).count() == 6
    # The run's page shows it like any sync.
    assert done.figures()["kind"] == "hydrate" and not SyncRun.objects.filter(parts__isnull=False)


def _lists(folder, n: int, year: int = 2024) -> list:
    """n URLs over three repositories (two on GitHub, one on Gitee with alphanumeric numbers)."""
    folder.mkdir(exist_ok=True)
    files = []
    for name, host, owner, number in [
        ("Megatron-LM", "github.com", "NVIDIA", lambda i: str(1000 + i)),
        ("vllm", "github.com", "vllm-project", lambda i: str(5000 + i)),
        ("MindSpeed", "gitee.com", "ascend", lambda i: f"IB{i:04d}X"),
    ]:
        path = folder / f"{name}_{year}.txt"
        path.write_text(
            "".join(f"https://{host}/{owner}/{name}/issues/{number(i)}\n" for i in range(n))
        )
        files.append(path)
    return files


def test_the_import_takes_the_same_few_queries_for_30_urls_as_for_900_urls(db, tmp_path):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts = []
    for n in (10, 300):
        folder = tmp_path / str(n)
        result = parse_files(_lists(folder, n))
        with CaptureQueriesContext(connection) as queries:
            import_refs(result)
        counts.append(len(queries))
        assert (result.created_issues, result.study_years_set) == (3 * n, 3 * n)
        assert len(result.issue_ids) == 3 * n
        Issue.objects.all().delete()
        Repository.objects.all().delete()
    # Per repository a get_or_create; then one read, one COPY, one read of the new ids.
    assert counts[0] == counts[1], counts
    assert counts[1] < 30, counts


def test_a_list_read_again_under_another_year_moves_its_issues_and_queues_only_unfetched(
    db, tmp_path
):
    first = import_refs(parse_files(_lists(tmp_path / "a", 5, year=2023)))
    ids = sorted(first.issue_ids)
    fetched = Issue.objects.get(number="1002")
    fetched.fetched_at = timezone.now()
    fetched.save(update_fields=["fetched_at"])
    again = import_refs(parse_files(_lists(tmp_path / "b", 6, year=2024)))
    # Three new issues (one per repository), fifteen moved from 2023 to 2024.
    assert (again.created_issues, again.created_repositories) == (3, 0)
    assert again.study_years_set == 3 + 15
    assert set(Issue.objects.values_list("study_year", flat=True)) == {2024}
    # The same rows as before (no duplicate), and the fetched one is not queued again.
    assert Issue.objects.count() == 18
    assert set(ids) - set(again.issue_ids) == {fetched.pk}
    assert len(again.issue_ids) == 17
    # Read again unchanged: nothing to do.
    same = import_refs(parse_files(_lists(tmp_path / "c", 6, year=2024)))
    assert (same.created_issues, same.study_years_set) == (0, 0)
