"""Sync runs: collect a repository's issues and discussions one committed page at a time.

A run walks phases: the issue listing (sorted by update time, ascending, so an issue edited
mid-run moves behind the cursor and is seen again rather than skipped), then the repository-wide
comment listing where the forge has one, else per-issue comments for the issues whose comment
count or update time changed. `step()` fetches one page, and in one transaction upserts it
(keyed on (repository, number) and (issue, forge_id), so a retried page never duplicates), saves
the run's cursor and figures, and only then stores the page's ETag. A worker killed mid-page
leaves the cursor at the first page not stored; `resume_run` carries on from there.

`step()` never sleeps for a rate limit: it returns the time to try again, and the Celery task
(`ingest.tasks.sync_page`) re-queues itself for then. `run_inline` is the same loop for a
command-line process, which may sleep.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from ingest.forges import (
    FatalForgeError,
    ForgeClient,
    ForgeError,
    Page,
    RateLimited,
    client_for,
    query_param,
)
from ingest.keywords import Matcher, compile_keywords
from ingest.models import Comment, Issue, KeywordSet, PageETag, Repository, SyncRun

log = logging.getLogger(__name__)

ISSUE_UPDATE_FIELDS = [
    "url", "title", "body", "author", "state", "labels", "created_at", "updated_at",
    "closed_at", "comments_count", "is_pull_request", "raw", "filter_status",
    "matched_keywords", "fetched_at",
]  # fmt: skip
COMMENT_UPDATE_FIELDS = ["author", "body", "created_at", "updated_at", "raw"]
NOTES_PER_STEP = 10
MAX_ERRORS_KEPT = 50


@dataclass
class Step:
    """What to do after one step: go on, stop, or come back at `wait_until`."""

    more: bool
    wait_until: datetime | None = None


# -- keyword sets --------------------------------------------------------------------------


def keyword_set_for(repository: Repository) -> KeywordSet | None:
    if repository.keyword_set_id:
        return repository.keyword_set
    if repository.group:
        return KeywordSet.objects.filter(default_for_group__iexact=repository.group).first()
    return None


def matcher_for(repository: Repository, keyword_set: KeywordSet | None = None) -> Matcher | None:
    """The compiled filter of a framework repository; None for a toolkit (keeps every issue)."""
    if not repository.is_framework:
        return None
    keyword_set = keyword_set or keyword_set_for(repository)
    return compile_keywords(keyword_set.keywords) if keyword_set else None


def classify(matcher: Matcher | None, title: str, body: str, labels: list[str]):
    """(filter_status, matched keywords) of one issue."""
    if matcher is None:
        return Issue.FilterStatus.NOT_FILTERED, []
    found = matcher.matches(title, body, " ".join(labels))
    return (Issue.FilterStatus.KEPT if found else Issue.FilterStatus.FILTERED_OUT), found


def refilter_repository(
    repository: Repository, keyword_set: KeywordSet | None = None, batch: int = 2000
) -> dict[str, int]:
    """Apply the (changed) keyword set to the stored issues again: no request to the forge."""
    matcher = matcher_for(repository, keyword_set)
    counts = {"kept": 0, "filtered_out": 0, "not_filtered": 0, "changed": 0}
    # Changed issues grouped by their new (status, keywords): one UPDATE per group and batch.
    changed: dict[tuple[str, tuple[str, ...]], list[int]] = {}
    issues = Issue.objects.filter(repository=repository).values_list(
        "id", "title", "body", "labels", "filter_status", "matched_keywords"
    )
    for pk, title, body, labels, old_status, old_found in issues.iterator(chunk_size=batch):
        status, found = classify(matcher, title, body, labels or [])
        counts[status] += 1
        if status != old_status or found != old_found:
            changed.setdefault((status, tuple(found)), []).append(pk)
    with transaction.atomic():
        for (status, found), ids in changed.items():
            for i in range(0, len(ids), batch):
                Issue.objects.filter(pk__in=ids[i : i + batch]).update(
                    filter_status=status, matched_keywords=list(found)
                )
    counts["changed"] = sum(len(ids) for ids in changed.values())
    return counts


# -- storing pages --------------------------------------------------------------------------


def store_issues(
    run: SyncRun, client: ForgeClient, items: list[dict], matcher: Matcher | None
) -> None:
    """Upsert one page of issues and count them on the run (not saved here)."""
    repository = run.repository
    now = timezone.now()
    parsed: dict[str, tuple[dict, dict]] = {}
    for raw in items:
        fields = client.parse_issue(raw)
        run.issues_seen += 1
        if fields["is_pull_request"] and not repository.include_pull_requests:
            run.pull_requests_skipped += 1
            continue
        if run.until and fields["created_at"] and fields["created_at"] > run.until:
            continue
        parsed[fields["number"]] = (fields, raw)  # a repeat within a page: the last wins
    if not parsed:
        return
    existing = {
        number: (updated_at, comments_count)
        for number, updated_at, comments_count in Issue.objects.filter(
            repository=repository, number__in=list(parsed)
        ).values_list("number", "updated_at", "comments_count")
    }
    objs = []
    for number, (fields, raw) in parsed.items():
        status, found = classify(matcher, fields["title"], fields["body"], fields["labels"])
        run.filtered_in += status != Issue.FilterStatus.FILTERED_OUT
        run.filtered_out += status == Issue.FilterStatus.FILTERED_OUT
        before = existing.get(number)
        if before is None:
            run.issues_new += 1
        elif before[0] != fields["updated_at"]:
            run.issues_updated += 1
        if (
            not client.has_repository_comments
            and fields["comments_count"]
            and (before is None or before != (fields["updated_at"], fields["comments_count"]))
        ):
            run.notes_pending.append(number)
        if fields["updated_at"] and (
            run.max_updated_seen is None or fields["updated_at"] > run.max_updated_seen
        ):
            run.max_updated_seen = fields["updated_at"]
        fields["url"] = fields["url"] or f"{repository.web_url}/issues/{number}"
        objs.append(
            Issue(
                repository=repository,
                raw=raw,
                filter_status=status,
                matched_keywords=found,
                fetched_at=now,
                **fields,
            )
        )
    Issue.objects.bulk_create(
        objs,
        update_conflicts=True,
        unique_fields=["repository", "number"],
        update_fields=ISSUE_UPDATE_FIELDS,
    )


def store_comments(
    run: SyncRun,
    client: ForgeClient,
    items: list[dict],
    issue_number: str | None = None,
) -> None:
    """Upsert one page of comments; comments of issues not stored (PRs, out of window) skip."""
    # Keep each parsed comment beside its own raw payload: parse_comment drops some (GitLab's
    # system notes), so the two lists cannot be zipped after filtering.
    pairs = [(client.parse_comment(raw, issue_number), raw) for raw in items]
    pairs = [(comment, raw) for comment, raw in pairs if comment is not None]
    parsed = [comment for comment, _ in pairs]
    run.comments_seen += len(items)
    numbers = {c.issue_number for c in parsed if c.issue_number}
    issue_ids = dict(
        Issue.objects.filter(repository=run.repository, number__in=numbers).values_list(
            "number", "id"
        )
    )
    objs: dict[tuple[int, str], Comment] = {}
    for comment, raw in pairs:
        issue_id = issue_ids.get(comment.issue_number or "")
        if issue_id is None:
            run.comments_skipped += 1
            continue
        objs[(issue_id, comment.fields["forge_id"])] = Comment(
            issue_id=issue_id, raw=raw, **comment.fields
        )
    run.comments_skipped += len(items) - len(parsed)
    if objs:
        Comment.objects.bulk_create(
            list(objs.values()),
            update_conflicts=True,
            unique_fields=["issue", "forge_id"],
            update_fields=COMMENT_UPDATE_FIELDS,
        )


# -- runs ------------------------------------------------------------------------------------


def start_sync(
    repository: Repository,
    since: datetime | None = None,
    until: datetime | None = None,
    keyword_set: KeywordSet | None = None,
    full: bool = False,
    enqueue: bool = True,
) -> SyncRun:
    """Create a run (incremental from the last stored update unless `full` or `since`)."""
    if since is None and not full:
        repository.refresh_from_db(fields=["synced_until"])
        since = repository.synced_until
    client = client_for(repository)
    run = SyncRun.objects.create(
        repository=repository,
        since=since,
        until=until,
        keyword_set=keyword_set or keyword_set_for(repository),
        next_url=client.issues_url(since),
        chain=uuid.uuid4().hex,
    )
    if enqueue:
        _enqueue(run)
    return run


def _enqueue(run: SyncRun, eta: datetime | None = None) -> None:
    from ingest import tasks

    args = (run.pk, run.chain)
    transaction.on_commit(lambda: tasks.sync_page.apply_async(args, eta=eta))


def resume_run(run: SyncRun) -> SyncRun:
    """Continue an interrupted run from its saved cursor, as a new task chain."""
    if not run.is_active:
        return run
    run.chain = uuid.uuid4().hex
    run.save(update_fields=["chain"])
    _enqueue(run, eta=run.next_attempt_at if run.status == SyncRun.Status.WAITING else None)
    return run


def resume_stalled(stale_after: timedelta = timedelta(minutes=10)) -> list[int]:
    """Resume active runs that have made no progress for a while (their worker died)."""
    cutoff = timezone.now() - stale_after
    resumed = []
    for run in SyncRun.objects.filter(status__in=SyncRun.ACTIVE):
        last = run.heartbeat_at or run.created_at
        due = run.next_attempt_at is None or run.next_attempt_at <= timezone.now()
        if last < cutoff and due:
            resume_run(run)
            resumed.append(run.pk)
    return resumed


def sync_due_repositories() -> list[int]:
    """Start incremental runs of repositories whose re-sync interval has passed (celery beat)."""
    started = []
    now = timezone.now()
    for repo in Repository.objects.filter(sync_interval_hours__gt=0):
        if repo.sync_runs.filter(status__in=SyncRun.ACTIVE).exists():
            continue
        if repo.last_synced_at and repo.last_synced_at > now - timedelta(
            hours=repo.sync_interval_hours
        ):
            continue
        started.append(start_sync(repo).pk)
    return started


def _record_error(run: SyncRun, message: str) -> None:
    run.errors = [*run.errors, {"at": timezone.now().isoformat(), "message": message}][
        -MAX_ERRORS_KEPT:
    ]


def _add_client_figures(run: SyncRun, client: ForgeClient) -> None:
    run.requests += client.requests
    run.retries += client.retries
    if client.quota_remaining is not None:
        run.quota_remaining = client.quota_remaining
    if client.quota_reset is not None:
        run.quota_reset_at = client.quota_reset
    client.requests = client.retries = 0


def _finish(run: SyncRun) -> None:
    now = timezone.now()
    run.phase = SyncRun.Phase.FINISHED
    run.status = SyncRun.Status.DONE
    run.next_url = ""
    run.finished_at = now
    repo = run.repository
    fields = ["last_synced_at"]
    repo.last_synced_at = now
    newest = run.max_updated_seen
    if newest and (repo.synced_until is None or newest > repo.synced_until):
        repo.synced_until = run.max_updated_seen
        fields.append("synced_until")
    repo.save(update_fields=fields)


def _advance(run: SyncRun, client: ForgeClient, next_url: str | None) -> None:
    """Move the cursor past the page just stored (to the next phase when a listing ends)."""
    if next_url:
        run.next_url = next_url
        return
    if run.phase == SyncRun.Phase.ISSUES and client.has_repository_comments:
        run.phase = SyncRun.Phase.COMMENTS
        run.next_url = client.comments_url(run.since) or ""
        return
    if run.phase in (SyncRun.Phase.ISSUES, SyncRun.Phase.COMMENTS) and run.notes_pending:
        run.phase = SyncRun.Phase.NOTES
        run.next_url = ""
        return
    if run.phase == SyncRun.Phase.NOTES and run.notes_pending:
        return
    _finish(run)


def step(run_id: int, chain: str | None = None) -> Step:
    """Fetch and store one page of the run; safe to call twice for the same page."""
    run = SyncRun.objects.select_related("repository", "keyword_set").get(pk=run_id)
    if not run.is_active or (chain is not None and chain != run.chain):
        return Step(more=False)
    client = client_for(run.repository)
    client.secondary_streak = run.rate_limit_waits
    phase, url = run.phase, run.next_url
    if run.started_at is None or run.status != SyncRun.Status.RUNNING:
        SyncRun.objects.filter(pk=run.pk).update(
            status=SyncRun.Status.RUNNING,
            started_at=run.started_at or timezone.now(),
            heartbeat_at=timezone.now(),
            next_attempt_at=None,
        )
    notes: list[tuple[str, list[dict]]] = []
    skipped: list[str] = []
    page: Page | None = None
    try:
        if phase == SyncRun.Phase.NOTES:
            for number in run.notes_pending[:NOTES_PER_STEP]:
                items: list[dict] = []
                try:
                    for p in client.iter_pages(client.issue_comments_url(number)):
                        items.extend(p.items)
                except FatalForgeError as exc:
                    if exc.status not in (404, 410):
                        raise
                    skipped.append(f"comments of #{number} skipped: {exc}")  # issue gone
                notes.append((number, items))
        else:
            etag = PageETag.objects.filter(repository=run.repository, url=url).first()
            page = client.get_page(url, etag.etag if etag else None)
            if page.not_modified:
                page.next_url = etag.next_url or None if etag else None
    except RateLimited as exc:
        return _wait(run, client, exc)
    except ForgeError as exc:
        return _fail(run, client, exc)

    with transaction.atomic():
        if connection.vendor == "postgresql":
            # The page and the cursor commit together, so a commit lost in a crash only rewinds
            # the cursor: no need to wait for the disk flush.
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
        locked = SyncRun.objects.select_for_update().select_related("repository").get(pk=run.pk)
        if (
            locked.chain != run.chain
            or not locked.is_active
            or locked.phase != phase
            or locked.next_url != url
            or (phase == SyncRun.Phase.NOTES and locked.notes_pending != run.notes_pending)
        ):
            return Step(more=locked.is_active and locked.chain == run.chain)  # done elsewhere
        run = locked
        if phase == SyncRun.Phase.NOTES:
            for number, items in notes:
                store_comments(run, client, items, issue_number=number)
            run.notes_pending = run.notes_pending[len(notes) :]
            for message in skipped:
                _record_error(run, message)
            run.pages += len(notes)
            next_url = None
        else:
            assert page is not None
            run.pages += 1
            if page.pages_estimate and query_param(page.url, "page") in (None, "1"):
                # The first page of a listing tells how many follow (when the forge says).
                run.pages_estimate = run.pages - 1 + page.pages_estimate
            if page.not_modified:
                run.not_modified += 1
            elif phase == SyncRun.Phase.ISSUES:
                store_issues(run, client, page.items, matcher_for(run.repository, run.keyword_set))
            else:
                store_comments(run, client, page.items)
            next_url = page.next_url
        _add_client_figures(run, client)
        run.heartbeat_at = timezone.now()
        run.status = SyncRun.Status.RUNNING
        _advance(run, client, next_url)
        run.save()
        # The ETag only once the page itself is stored: a 304 must never hide a lost page.
        if page is not None and page.etag and not page.not_modified:
            PageETag.objects.bulk_create(
                [
                    PageETag(
                        repository=run.repository,
                        url=page.url,
                        etag=page.etag,
                        next_url=page.next_url or "",
                    )
                ],
                update_conflicts=True,
                unique_fields=["repository", "url"],
                update_fields=["etag", "next_url", "updated_at"],
            )
    return Step(more=run.is_active)


def _wait(run: SyncRun, client: ForgeClient, exc: RateLimited) -> Step:
    limit = getattr(settings, "INGEST_MAX_RATE_LIMIT_WAITS", 50)
    if run.rate_limit_waits >= limit:
        return _fail(run, client, FatalForgeError(f"still rate limited after {limit} waits: {exc}"))
    run.refresh_from_db()
    _add_client_figures(run, client)
    run.status = SyncRun.Status.WAITING
    run.next_attempt_at = exc.retry_at
    run.rate_limit_waits = F("rate_limit_waits") + 1
    run.heartbeat_at = timezone.now()
    _record_error(run, f"rate limited until {exc.retry_at.isoformat()}: {exc}")
    run.save()
    log.info("sync %s waits for the rate limit until %s", run.pk, exc.retry_at)
    return Step(more=True, wait_until=exc.retry_at)


def _fail(run: SyncRun, client: ForgeClient, exc: ForgeError) -> Step:
    run.refresh_from_db()
    _add_client_figures(run, client)
    run.status = SyncRun.Status.FAILED
    run.finished_at = timezone.now()
    _record_error(run, str(exc))
    run.save()
    log.warning("sync %s failed: %s", run.pk, exc)
    return Step(more=False)


def run_inline(
    run: SyncRun, sleep: Callable[[float], None] = time.sleep, max_steps: int | None = None
) -> SyncRun:
    """Drive a run to its end in this process (the command line, tests, benchmarks)."""
    steps = 0
    while True:
        result = step(run.pk, run.chain)
        steps += 1
        if result.wait_until is not None:
            sleep(max(0.0, (result.wait_until - timezone.now()).total_seconds()))
        elif not result.more or (max_steps is not None and steps >= max_steps):
            break
    run.refresh_from_db()
    return run


# -- single issues (URL lists) ----------------------------------------------------------------


def hydrate_issue(issue: Issue) -> Issue:
    """Fetch one issue and its comments by number (issues known only by URL)."""
    repository = issue.repository
    client = client_for(repository)
    try:
        page = client.get_page(client.issue_url(issue.number))
    except FatalForgeError as exc:
        if exc.status == 410:
            issue.state = "deleted"
            issue.fetched_at = timezone.now()
            issue.save(update_fields=["state", "fetched_at"])
            return issue
        raise
    fields = client.parse_issue(page.items[0])
    matcher = matcher_for(repository)
    status, found = classify(matcher, fields["title"], fields["body"], fields["labels"])
    raw = page.items[0]
    if page.final_url:
        raw = {**raw, "moved_to": page.final_url}  # a transferred issue: recorded, not copied
    fields.pop("number")
    fields["url"] = issue.url or fields["url"]
    for name, value in fields.items():
        setattr(issue, name, value)
    issue.raw, issue.filter_status, issue.matched_keywords = raw, status, found
    issue.fetched_at = timezone.now()
    with transaction.atomic():
        issue.save()
        if issue.comments_count and not page.final_url:
            run = SyncRun(repository=repository)
            for p in client.iter_pages(client.issue_comments_url(issue.number)):
                store_comments(run, client, p.items, issue_number=issue.number)
    return issue
