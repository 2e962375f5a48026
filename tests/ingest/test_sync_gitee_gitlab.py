"""Gitee (no Link header, +08:00 times, token in the query) and GitLab (notes per issue)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from ingest.models import Comment, Issue
from ingest.runs import start_sync
from ingest.steps import run_inline

TOKEN = "gitee-SECRET-token-123"


def test_gitee_full_sync_pages_by_total_page_and_normalises_times(
    fake, make_repo, settings, caplog
):
    settings.FORGE_TOKENS = {"github": "", "gitee": TOKEN, "gitlab": ""}
    fake.tokens["gitee"] = TOKEN
    forge, repo = make_repo("gitee", "ascend", "MindSpeed", group="MindSpeed")
    numbers = [f"IB{n:04X}" for n in range(230)]
    for i, number in enumerate(numbers):
        forge.add_issue(number, created=f"2024-03-01T{i // 60:02d}:{i % 60:02d}:00Z", comments=1)
    forge.add_issue("IBd6yu", created="2024-12-31T17:30:00Z")  # 2025-01-01 01:30 in Beijing
    forge.add_issue("IBD6YU", created="2024-12-31T15:30:00Z")  # case-sensitive: another issue

    with caplog.at_level(logging.DEBUG):
        run = run_inline(start_sync(repo, enqueue=False))

    assert run.status == "done", run.errors
    assert Issue.objects.filter(repository=repo).count() == 232
    assert Comment.objects.filter(issue__repository=repo).count() == 230
    assert not any("Link" in r.headers for r in fake.requests)
    assert fake.count("/issues", status=200) == 3 + 3  # issue pages then comment pages
    late = Issue.objects.get(repository=repo, number="IBd6yu")
    assert late.created_at == datetime(2024, 12, 31, 17, 30, tzinfo=UTC)
    assert Issue.objects.get(repository=repo, number="IBD6YU").pk != late.pk
    assert all(r.query.get("access_token") == TOKEN for r in fake.requests)
    # The token travels in the query string, and is stored or logged nowhere.
    assert TOKEN not in caplog.text
    run.refresh_from_db()
    cursors = list(run.parts.values_list("next_url", flat=True))
    assert TOKEN not in str(cursors) + str(run.errors)
    assert not Issue.objects.filter(raw__icontains=TOKEN).exists()


def test_gitee_with_link_header_pages_the_same(fake, make_repo):
    fake.gitee_link = True
    forge, repo = make_repo("gitee", "mindspore", "mindspore")
    for i in range(150):
        forge.add_issue(f"I{i:05d}", created=f"2024-03-01T00:{i // 60:02d}:{i % 60:02d}Z")
    run = run_inline(start_sync(repo, enqueue=False))
    assert run.status == "done"
    assert Issue.objects.filter(repository=repo).count() == 150


def test_gitlab_fetches_notes_only_for_issues_whose_discussion_changed(fake, make_repo):
    forge, repo = make_repo("gitlab", "group/sub", "project")
    for n in range(1, 121):
        forge.add_issue(n, created=f"2024-01-01T00:{n // 60:02d}:{n % 60:02d}Z", comments=n % 3)
    forge.issues["5"].comments[0].system = True  # "changed the label": not discussion

    run = run_inline(start_sync(repo, enqueue=False))

    assert run.status == "done", run.errors
    assert Issue.objects.filter(repository=repo).count() == 120
    with_notes = sum(1 for i in forge.issues.values() if any(not c.system for c in i.comments))
    assert fake.count("/notes") == with_notes  # none for issues without notes
    assert Comment.objects.filter(issue__repository=repo).count() == sum(
        1 for i in forge.issues.values() for c in i.comments if not c.system
    )
    assert fake.count("/issues", status=200) - fake.count("/notes") == 2
    # The note after the skipped system note keeps its own payload, not the system note's.
    kept = Comment.objects.get(issue__repository=repo, issue__number="5")
    assert str(kept.raw["id"]) == kept.forge_id
    assert not kept.raw.get("system")

    forge.add_comment(4, "me too", at="2024-09-01T00:00:00Z")
    fake.reset_counts()
    again = run_inline(start_sync(repo, enqueue=False))
    assert again.status == "done"
    assert fake.count("/notes") == 1 and fake.count() == 2, [
        (r.path[-30:], r.query.get("page"), r.query.get("updated_after")) for r in fake.requests
    ]
    assert Issue.objects.get(repository=repo, number="4").comments.count() == 2
