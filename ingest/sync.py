"""Sync runs: collect a repository's issues and discussions one committed page at a time.

A run walks phases: the issue listing (sorted by update time, ascending, so an issue edited
mid-run moves behind the cursor and is seen again rather than skipped), then the repository-wide
comment listing where the forge has one, else per-issue comments for the issues whose comment
count or update time changed.

Parts. The cursor of a run lives in its parts (`SyncPart`), each one chain of page tasks
(`ingest.tasks.sync_part`) with its own committed cursor. `step_part()` fetches one page of a
part and, in one transaction, upserts it (keyed on (repository, number) and (issue, forge_id),
so a retried page, or two workers on one page, never duplicate, and an edited issue or comment
is updated in place), saves the part's cursor, adds the page's figures to the run, and only
then stores the page's ETag. A worker killed mid-page leaves its part's cursor at the first
page not stored; `resume_run` (or `resume_stalled`, from celery beat) carries on from there.
Each stored page gives the part a new chain token, so a duplicate or stale task of a part stops
rather than walking the same pages beside the live one.

Splitting a large run among workers. A run starts as one part on the issue listing. When its
first page shows that more pages follow and the run wants N parts (`parts_wanted`: the
INGEST_SYNC_PARTS setting, default 4, for a run queued for workers; 1 for a run driven in one
process), one more request fetches the listing's newest item (`direction=desc&per_page=1`),
and the update times from the last one on the first page to that newest one are cut into N
equal slices. The first part keeps walking its own pages up to the first boundary; every other
slice becomes a part of its own whose listing starts at `since=<slice start>` (every forge
filters its listings on "updated at or after") and which ends on the first page that passes the
slice's end. Items at or after the end belong to the next slice, so each item is stored by
exactly one part, and a slice costs at most one extra request (the page across its end). The
comment listing is split the same way once every issue part is done: a comment needs its issue
stored first, and that is the one barrier. On GitLab (no repository-wide comments) each issue
part then fetches the notes of its own issues. Slices are equal in time, not in items: a
repository busier lately gives its later parts more pages; more parts than workers evens that
out, since a free worker takes whichever part's next task is queued.

An issue edited mid-run moves to the newest slice; if that slice's part has already finished,
the next incremental run (from the newest update stored) picks the edit up.

Storing a page. On PostgreSQL a page is one statement: the page's rows go as one JSON array
(one `json.dumps`), unpacked by jsonb_to_recordset into an INSERT … SELECT … ON CONFLICT DO
UPDATE in key order (issues also report, in the same statement, which of them existed and with
what update time and comment count; comments find their issue ids in it, one unique-index
look-up each). COPY into a temporary table was measured too: no less CPU, three more round
trips a page and per-session tables to keep empty. Other databases (the SQLite first look) use
the ORM's bulk upsert. The rest of a common step (read the part, lock it, add the figures to
the run, move the cursor, keep the ETag) is a few plain statements in four round trips, each a
fraction of the ORM's cost; the rare ends of a step (a split, a phase change, the end of a part
or of the run) go through the ORM. A step reads its run's repository
and keyword set once per process, and keeps one HTTP session (one open connection to the
forge) per thread.

`step_part()` never sleeps for a rate limit: it returns the time to try again, and the Celery
task re-queues itself for then. `run_inline` drives every part of a run in one process (the
command line, tests, benchmarks), and may sleep.

Forge links. An issue's `html_url` (`web_url` on GitLab) is stored as its URL only when it is
https on the forge's web host (for a repository on a listed API host: that host, http if the API
URL is http; `ingest.hosts.web_origin_ok`); otherwise the canonical
`<repository web URL>/issues/<number>` is stored instead (the issue URL is unique, so it cannot
be left empty) and the forge's value stays in `raw`.

URL lists. `hydrate_issues` fetches issues known only by their URL one by one, recorded as a
run of kind "hydrate" per repository (issues fetched out of those to fetch, requests,
comments, an error log naming the issues that could not be fetched, moved or deleted ones).
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from ingest.forges import (
    FatalForgeError,
    ForgeClient,
    ForgeError,
    Page,
    RateLimited,
    client_for,
    query_param,
    redact,
)
from ingest.hosts import ForgeSession, web_origin_ok
from ingest.keywords import Matcher, compile_keywords
from ingest.models import (
    Comment,
    Issue,
    KeywordSet,
    PageETag,
    Repository,
    SyncPart,
    SyncRun,
)

log = logging.getLogger(__name__)

# The columns of a stored page, in the order of the rows built below.
ISSUE_COLUMNS = [
    "number", "url", "title", "body", "author", "state", "labels", "created_at", "updated_at",
    "closed_at", "comments_count", "is_pull_request", "raw", "filter_status",
    "matched_keywords",
]  # fmt: skip
ISSUE_UPDATE_FIELDS = [c for c in ISSUE_COLUMNS if c != "number"] + ["fetched_at"]
COMMENT_COLUMNS = ["forge_id", "author", "body", "created_at", "updated_at", "raw"]
COMMENT_UPDATE_FIELDS = [c for c in COMMENT_COLUMNS if c != "forge_id"]
NOTES_PER_STEP = 10
MAX_ERRORS_KEPT = 50
Phase = SyncRun.Phase
Status = SyncRun.Status


@dataclass
class Step:
    """What to do after one step of a part: go on, stop, or come back at `wait_until`.

    `chain` is the token the part's next task must carry; `spawned` are new parts (id, token)
    to queue beside it.
    """

    more: bool
    wait_until: datetime | None = None
    chain: str = ""
    spawned: list[tuple[int, str]] = field(default_factory=list)


@dataclass
class Tally:
    """What one step adds to its run's figures (added under the run's row lock)."""

    pages: int = 0
    not_modified: int = 0
    issues_seen: int = 0
    issues_new: int = 0
    issues_updated: int = 0
    filtered_in: int = 0
    filtered_out: int = 0
    pull_requests_skipped: int = 0
    comments_seen: int = 0
    comments_skipped: int = 0
    max_updated_seen: datetime | None = None
    page_newest: datetime | None = None  # of every item on the page, stored or not
    notes: list[str] = field(default_factory=list)  # issues whose own comments to fetch
    passed_end: bool = False  # the page went past the end of its part's slice

    COUNTERS = (
        "pages", "not_modified", "issues_seen", "issues_new", "issues_updated", "filtered_in",
        "filtered_out", "pull_requests_skipped", "comments_seen", "comments_skipped",
    )  # fmt: skip

    def saw(self, updated_at: datetime | None) -> None:
        if updated_at and (self.max_updated_seen is None or updated_at > self.max_updated_seen):
            self.max_updated_seen = updated_at

    def on_page(self, updated_at: datetime | None) -> None:
        if updated_at and (self.page_newest is None or updated_at > self.page_newest):
            self.page_newest = updated_at

    def add_to(self, run: SyncRun) -> None:
        for name in self.COUNTERS:
            setattr(run, name, getattr(run, name) + getattr(self, name))
        if self.max_updated_seen and (
            run.max_updated_seen is None or self.max_updated_seen > run.max_updated_seen
        ):
            run.max_updated_seen = self.max_updated_seen


def _token() -> str:
    return uuid.uuid4().hex


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


def _columns(model, names: Sequence[str]) -> str:
    qn = connection.ops.quote_name
    return ", ".join(qn(model._meta.get_field(n).column) for n in names)


# A page travels to PostgreSQL as one JSON array, unpacked there by jsonb_to_recordset.
PAGE_COLUMNS = {
    "issues": "number text, url text, title text, body text, author text, state text,"
    " labels jsonb, created_at timestamptz, updated_at timestamptz, closed_at timestamptz,"
    " comments_count integer, is_pull_request boolean, raw jsonb, filter_status text,"
    " matched_keywords jsonb",
    "comments": "issue_number text, forge_id text, author text, body text,"
    " created_at timestamptz, updated_at timestamptz, raw jsonb",
}


def _page_json(names: Sequence[str], rows: list[tuple]) -> str:
    """Rows as one JSON array of objects (times in ISO 8601), for jsonb_to_recordset."""
    return json.dumps(
        [
            {
                name: value.isoformat() if isinstance(value, datetime) else value
                for name, value in zip(names, row, strict=True)
            }
            for row in rows
        ]
    )


def _upsert_issues(
    repository: Repository, rows: list[tuple], now: datetime
) -> dict[str, tuple[datetime | None, int]]:
    """Store issue rows (ISSUE_COLUMNS order); the (updated_at, comments_count) they had."""
    if connection.vendor != "postgresql":
        return _upsert_issues_orm(repository, rows, now)
    qn = connection.ops.quote_name
    table = qn(Issue._meta.db_table)
    targets = _columns(Issue, ["repository", "fetched_at", *ISSUE_COLUMNS])
    sets = ", ".join(
        f"{qn(c)} = EXCLUDED.{qn(c)}"
        for c in (Issue._meta.get_field(n).column for n in ISSUE_UPDATE_FIELDS)
    )
    key = _columns(Issue, ["repository", "number"])
    with connection.cursor() as cursor:
        # One statement: the rows as they were (its snapshot is taken before the insert),
        # and the upsert, in key order so two workers on overlapping pages lock alike. The
        # planner knows nothing of the page's rows, so a plain join may hash the repository's
        # every issue for each page; the fenced LATERAL looks each number up in the unique
        # index instead.
        cursor.execute(
            f"WITH page AS MATERIALIZED (SELECT * FROM jsonb_to_recordset(%s::jsonb)"  # noqa: S608
            f" AS t({PAGE_COLUMNS['issues']})),"
            f" old AS (SELECT p.number, i.updated_at, i.comments_count"
            f" FROM page p CROSS JOIN LATERAL (SELECT updated_at, comments_count"
            f" FROM {table} WHERE repository_id = %s AND number = p.number OFFSET 0) i),"
            f" up AS (INSERT INTO {table} ({targets})"
            f" SELECT %s, %s, {', '.join(ISSUE_COLUMNS)} FROM page ORDER BY number"
            f" ON CONFLICT ({key}) DO UPDATE SET {sets})"
            f" SELECT number, updated_at, comments_count FROM old",
            [_page_json(ISSUE_COLUMNS, rows), repository.pk, repository.pk, now],
        )
        return {number: (updated, count) for number, updated, count in cursor.fetchall()}


def _upsert_issues_orm(
    repository: Repository, rows: list[tuple], now: datetime
) -> dict[str, tuple[datetime | None, int]]:
    numbers = [row[0] for row in rows]
    existing = {
        number: (updated_at, comments_count)
        for number, updated_at, comments_count in Issue.objects.filter(
            repository=repository, number__in=numbers
        ).values_list("number", "updated_at", "comments_count")
    }
    Issue.objects.bulk_create(
        [
            Issue(repository=repository, fetched_at=now, **fields)
            for fields in (dict(zip(ISSUE_COLUMNS, row, strict=True)) for row in rows)
        ],
        update_conflicts=True,
        unique_fields=["repository", "number"],
        update_fields=ISSUE_UPDATE_FIELDS,
    )
    return existing


def _upsert_comments(repository: Repository, rows: list[tuple]) -> int:
    """Store comment rows (issue number, then COMMENT_COLUMNS); how many had their issue."""
    if connection.vendor != "postgresql":
        return _upsert_comments_orm(repository, rows)
    qn = connection.ops.quote_name
    table, issues = qn(Comment._meta.db_table), qn(Issue._meta.db_table)
    sets = ", ".join(f"{qn(c)} = EXCLUDED.{qn(c)}" for c in COMMENT_UPDATE_FIELDS)
    key = _columns(Comment, ["issue", "forge_id"])
    with connection.cursor() as cursor:
        # Comments of issues not stored (pull requests, outside the window) find no issue.
        # The issue id is a scalar subquery, one unique-index look-up a comment: a join could
        # hash the repository's every issue for each page (the page table has no statistics).
        # OFFSET 0 keeps the subquery whole, so the look-up is not repeated for the filter.
        cursor.execute(
            f"WITH page AS (SELECT * FROM jsonb_to_recordset(%s::jsonb)"  # noqa: S608
            f" AS t({PAGE_COLUMNS['comments']})),"
            f" up AS (INSERT INTO {table} ({_columns(Comment, ['issue', *COMMENT_COLUMNS])})"
            f" SELECT issue_id, {', '.join(COMMENT_COLUMNS)} FROM (SELECT (SELECT id FROM {issues}"
            f" WHERE repository_id = %s AND number = p.issue_number) AS issue_id, p.*"
            f" FROM page p OFFSET 0) found WHERE issue_id IS NOT NULL"
            f" ORDER BY issue_id, forge_id"
            f" ON CONFLICT ({key}) DO UPDATE SET {sets} RETURNING 1)"
            f" SELECT count(*) FROM up",
            [_page_json(["issue_number", *COMMENT_COLUMNS], rows), repository.pk],
        )
        return cursor.fetchone()[0]


def _upsert_comments_orm(repository: Repository, rows: list[tuple]) -> int:
    issue_ids = dict(
        Issue.objects.filter(repository=repository, number__in={r[0] for r in rows}).values_list(
            "number", "id"
        )
    )
    objs = [
        Comment(issue_id=issue_ids[row[0]], **dict(zip(COMMENT_COLUMNS, row[1:], strict=True)))
        for row in rows
        if row[0] in issue_ids
    ]
    if objs:
        Comment.objects.bulk_create(
            objs,
            update_conflicts=True,
            unique_fields=["issue", "forge_id"],
            update_fields=COMMENT_UPDATE_FIELDS,
        )
    return len(objs)


def store_issues(
    repository: Repository,
    client: ForgeClient,
    items: list[dict],
    matcher: Matcher | None,
    tally: Tally,
    until: datetime | None = None,
    window_end: datetime | None = None,
) -> None:
    """Upsert one page of issues, counting them (and the issues whose comments to fetch)."""
    rows: dict[str, tuple] = {}
    parse, web_url = client.parse_issue, repository.web_url
    include_prs = repository.include_pull_requests
    off_site = 0
    for raw in items:
        fields = parse(raw)
        updated = fields["updated_at"]
        tally.on_page(updated)
        if window_end is not None and updated is not None and updated >= window_end:
            tally.passed_end = True  # the next slice's (the listing is in update order)
            continue
        tally.issues_seen += 1
        if fields["is_pull_request"] and not include_prs:
            tally.pull_requests_skipped += 1
            continue
        if until and fields["created_at"] and fields["created_at"] > until:
            continue
        number = fields["number"]
        status, found = classify(matcher, fields["title"], fields["body"], fields["labels"])
        url = fields["url"]
        if not web_origin_ok(repository, url):
            # The forge's link is hostile input: off the forge's web host (or javascript:,
            # data: …) it is replaced by the issue's canonical URL; `raw` keeps what came.
            off_site += bool(url)
            url = f"{web_url}/issues/{number}"
        # A repeat within a page: the last wins.
        rows[number] = (
            number, url, fields["title"],
            fields["body"], fields["author"], fields["state"], fields["labels"],
            fields["created_at"], updated, fields["closed_at"], fields["comments_count"],
            fields["is_pull_request"], raw, status, found,
        )  # fmt: skip
    if off_site:
        log.warning(
            "%s: %d issue links off the forge's web host replaced by canonical URLs",
            repository,
            off_site,
        )
    if not rows:
        return
    existing = _upsert_issues(repository, list(rows.values()), timezone.now())
    per_issue_comments = not client.has_repository_comments
    out = Issue.FilterStatus.FILTERED_OUT
    for number, row in rows.items():
        updated, count = row[8], row[10]
        if row[13] == out:
            tally.filtered_out += 1
        else:
            tally.filtered_in += 1
        before = existing.get(number)
        if before is None:
            tally.issues_new += 1
        elif before[0] != updated:
            tally.issues_updated += 1
        if per_issue_comments and count and before != (updated, count):
            tally.notes.append(number)
        tally.saw(updated)


def store_comments(
    repository: Repository,
    client: ForgeClient,
    items: list[dict],
    tally: Tally,
    issue_number: str | None = None,
    window_end: datetime | None = None,
) -> None:
    """Upsert one page of comments; comments of issues not stored (PRs, out of window) skip."""
    rows: dict[tuple[str, str], tuple] = {}
    dropped = 0  # not discussion (GitLab's system notes), or without an issue
    parse = client.parse_comment
    for raw in items:
        comment = parse(raw, issue_number)
        if comment is not None:
            f = comment.fields
            tally.on_page(f["updated_at"])
            if window_end is not None and f["updated_at"] and f["updated_at"] >= window_end:
                tally.passed_end = True
                continue
        tally.comments_seen += 1
        if comment is None or not comment.issue_number:
            dropped += 1
            continue
        # Each comment keeps its own payload beside it (system notes are left out).
        rows[(comment.issue_number, f["forge_id"])] = (
            comment.issue_number, f["forge_id"], f["author"], f["body"], f["created_at"],
            f["updated_at"], raw,
        )  # fmt: skip
    stored = _upsert_comments(repository, list(rows.values())) if rows else 0
    tally.comments_skipped += dropped + len(rows) - stored


# -- runs ------------------------------------------------------------------------------------


def start_sync(
    repository: Repository,
    since: datetime | None = None,
    until: datetime | None = None,
    keyword_set: KeywordSet | None = None,
    full: bool = False,
    enqueue: bool = True,
    parts: int | None = None,
    queue: str | None = None,
) -> SyncRun:
    """Create a run (incremental from the last stored update unless `full` or `since`).

    `parts`: how many time slices a long listing is split into for several workers; by
    default INGEST_SYNC_PARTS for a queued run and 1 for a run driven in one process.
    `queue`: the Celery queue of the run's tasks (default: the default queue).
    """
    if since is None and not full:
        repository.refresh_from_db(fields=["synced_until"])
        since = repository.synced_until
    if parts is None:
        parts = settings.INGEST_SYNC_PARTS if enqueue else 1
    client = client_for(repository)
    run = SyncRun.objects.create(
        repository=repository,
        since=since,
        until=until,
        keyword_set=keyword_set or keyword_set_for(repository),
        parts_wanted=max(1, parts),
    )
    part = SyncPart.objects.create(run=run, next_url=client.issues_url(since), chain=_token())
    if enqueue:
        enqueue_part(part.pk, part.chain, queue=queue)
    return run


# The page task, by its Celery name: the tasks module calls this one, never the reverse.
SYNC_PART_TASK = "ingest.tasks.sync_part"


def enqueue_part(
    part_id: int, chain: str, eta: datetime | None = None, queue: str | None = None
) -> None:
    """Queue a part's next task once the transaction commits (on `queue`, else the default)."""
    options = {"queue": queue} if queue else {}
    transaction.on_commit(
        lambda: current_app.send_task(SYNC_PART_TASK, (part_id, chain), eta=eta, **options)
    )


def resume_run(run: SyncRun) -> SyncRun:
    """Continue an interrupted run: every unfinished part from its saved cursor, as new chains."""
    run.refresh_from_db()
    if not run.is_active:
        return run
    for part in run.parts.filter(status__in=SyncRun.ACTIVE):
        _resume_part(part)
    return run


def _resume_part(part: SyncPart) -> None:
    part.chain = _token()
    part.save(update_fields=["chain"])
    due = part.next_attempt_at if part.status == Status.WAITING else None
    enqueue_part(part.pk, part.chain, eta=due)


def resume_stalled(stale_after: timedelta = timedelta(minutes=10)) -> list[int]:
    """Resume the parts of active runs that have made no progress for a while (their worker
    died); the ids of the runs concerned."""
    now = timezone.now()
    cutoff = now - stale_after
    resumed: set[int] = set()
    parts = SyncPart.objects.filter(
        status__in=SyncRun.ACTIVE, run__status__in=SyncRun.ACTIVE
    ).select_related("run")
    for part in parts:
        last = part.heartbeat_at or part.created_at
        due = part.next_attempt_at is None or part.next_attempt_at <= now
        if last < cutoff and due:
            _resume_part(part)
            resumed.add(part.run_id)
    return sorted(resumed)


def sync_due_repositories() -> list[int]:
    """Start incremental runs of repositories whose re-sync interval has passed (celery beat)."""
    started = []
    now = timezone.now()
    for repo in Repository.objects.filter(sync_interval_hours__gt=0):
        if repo.sync_runs.filter(status__in=SyncRun.ACTIVE, kind=SyncRun.Kind.SYNC).exists():
            continue
        if repo.last_synced_at and repo.last_synced_at > now - timedelta(
            hours=repo.sync_interval_hours
        ):
            continue
        started.append(start_sync(repo).pk)
    return started


def _record_error(run: SyncRun, message: str) -> None:
    # Redacted again here: whatever reaches a run's log is shown to leads and staff.
    entry = {"at": timezone.now().isoformat(), "message": redact(message)}
    run.errors = [*run.errors, entry][-MAX_ERRORS_KEPT:]


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
    run.phase = Phase.FINISHED
    run.status = Status.DONE
    run.finished_at = now
    repo = run.repository
    fields = ["last_synced_at"]
    repo.last_synced_at = now
    newest = run.max_updated_seen
    if newest and (repo.synced_until is None or newest > repo.synced_until):
        repo.synced_until = run.max_updated_seen
        fields.append("synced_until")
    repo.save(update_fields=fields)


def _listing_url(client: ForgeClient, listing: str, since: datetime | None) -> str:
    url = client.issues_url(since) if listing == Phase.ISSUES else client.comments_url(since)
    return url or ""


def _slices(first: datetime, newest: datetime, parts: int) -> list[datetime]:
    """Whole-second boundaries cutting (first, newest] into `parts` equal slices."""
    span = (newest - first).total_seconds()
    base = first.replace(microsecond=0)
    bounds = []
    for i in range(1, parts):
        bound = base + timedelta(seconds=math.floor(span * i / parts) + 1)
        if bound <= newest and (not bounds or bound > bounds[-1]):
            bounds.append(bound)
    return bounds


def _split(
    run: SyncRun, part: SyncPart, client: ForgeClient, bounds: list[datetime]
) -> list[SyncPart]:
    """Give the slices after the first boundary to new parts; this part keeps the first."""
    part.window_end = bounds[0]
    ends: list[datetime | None] = [*bounds[1:], None]
    return SyncPart.objects.bulk_create(
        [
            SyncPart(
                run=run,
                listing=part.listing,
                phase=part.listing,
                window_start=start,
                window_end=end,
                next_url=_listing_url(client, part.listing, start),
                chain=_token(),
            )
            for start, end in zip(bounds, ends, strict=True)
        ]
    )


def _part_done(run: SyncRun, part: SyncPart, client: ForgeClient) -> list[SyncPart]:
    """Close a part; open the comment listing after the last issue part; finish the run after
    the last part. Called under the run's row lock, so two parts ending at once see each other.
    """
    part.phase, part.status, part.next_url = Phase.FINISHED, Status.DONE, ""
    others = run.parts.filter(status__in=SyncRun.ACTIVE).exclude(pk=part.pk)
    if (
        part.listing == Phase.ISSUES
        and client.has_repository_comments
        and not others.filter(listing=Phase.ISSUES).exists()
    ):
        run.phase = Phase.COMMENTS
        comments = SyncPart.objects.create(
            run=run,
            listing=Phase.COMMENTS,
            phase=Phase.COMMENTS,
            next_url=_listing_url(client, Phase.COMMENTS, run.since),
            chain=_token(),
        )
        return [comments]
    if not others.exists():
        _finish(run)
    return []


def _newest(client: ForgeClient, part: SyncPart, page: Page) -> tuple[datetime, datetime] | None:
    """(last update on the first page, newest update of the listing) to cut a listing into
    slices, or None when it is not worth it. Costs one request."""
    on_page = [client.updated_at(part.listing, raw) for raw in page.items]
    on_page = [t for t in on_page if t is not None]
    if not on_page:
        return None
    try:
        probe = client.get_page(client.newest_url(part.next_url))
    except RateLimited:
        raise
    except ForgeError as exc:
        log.warning("could not split part %s: %s", part.pk, exc)
        return None
    newest = [client.updated_at(part.listing, raw) for raw in probe.items[:1]]
    if not newest or newest[0] is None or newest[0] <= max(on_page):
        return None
    return max(on_page), newest[0]


def _sql(sql: str, params: Sequence[Any] = ()) -> list[tuple]:
    return _batch((sql, params))


def _batch(*statements: tuple[str, Sequence[Any]]) -> list[tuple]:
    """Run statements; the rows of the last one that returns rows. On PostgreSQL they go in
    one round trip (the parameters are bound here, client-side, as for every query)."""
    rows: list[tuple] = []
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            sql = "; ".join(sql for sql, _ in statements)
            cursor.execute(sql, [p for _, params in statements for p in params])
            while True:
                if cursor.description is not None:
                    rows = cursor.fetchall()
                if not cursor.nextset():
                    return rows
        for sql, params in statements:
            cursor.execute(sql, params)
            if cursor.description is not None:
                rows = cursor.fetchall()
    return rows


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def _when(value: datetime | None) -> Any:
    """A time as a raw-SQL parameter (SQLite keeps times as text in the ORM's own format)."""
    return connection.ops.adapt_datetimefield_value(value)


_sessions = threading.local()


def _session() -> ForgeSession:
    """One HTTP session per thread, kept between pages: the connection to the forge stays open.
    Tokens travel per request, never in the session."""
    session = getattr(_sessions, "session", None)
    if session is None:
        session = _sessions.session = ForgeSession()
    return session


_PART_FIELDS = [
    "run_id", "listing", "phase", "status", "window_start", "window_end", "next_url",
    "notes_pending", "chain", "pages",
]  # fmt: skip
_RUN_FIELDS = [
    "status", "started_at", "rate_limit_waits", "since", "until", "parts_wanted",
    "keyword_set_id", "repository_id",
]  # fmt: skip
_contexts: dict[int, tuple[Repository, KeywordSet | None]] = {}


def _time(value: Any) -> datetime | None:
    """A time read by plain SQL, aware (SQLite gives the ORM's naive UTC text)."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if value is not None and timezone.is_naive(value):
        value = timezone.make_aware(value, UTC)
    return value


def _load(part_id: int) -> tuple[SyncPart, SyncRun, PageETag | None] | None:
    """A part, its run and the ETag of the part's next page, in one query. The instances hold
    what a step reads; the ORM reloads them for the rare writes (`_transition`)."""
    columns = [f"p.{c}" for c in _PART_FIELDS] + [f"r.{c}" for c in _RUN_FIELDS]
    rows = _sql(
        f"SELECT {', '.join(columns)}, e.etag, e.next_url, e.max_updated_at"  # noqa: S608
        " FROM ingest_syncpart p JOIN ingest_syncrun r ON r.id = p.run_id"
        " LEFT JOIN ingest_pageetag e ON e.repository_id = r.repository_id"
        " AND e.url = p.next_url WHERE p.id = %s",
        [part_id],
    )
    if not rows:
        return None
    row = rows[0]
    n = len(_PART_FIELDS)
    part = SyncPart(id=part_id, **dict(zip(_PART_FIELDS, row[:n], strict=True)))
    run = SyncRun(
        id=part.run_id, **dict(zip(_RUN_FIELDS, row[n : n + len(_RUN_FIELDS)], strict=True))
    )
    part.notes_pending = _json(part.notes_pending) or []
    for obj, names in (
        (part, ["window_start", "window_end"]),
        (run, ["started_at", "since", "until"]),
    ):
        for name in names:
            setattr(obj, name, _time(getattr(obj, name)))
    etag_value, etag_next, etag_newest = row[-3:]
    etag = None
    if etag_value is not None:
        etag = PageETag(etag=etag_value, next_url=etag_next, max_updated_at=_time(etag_newest))
    # The repository and keyword set: read once per run in this process.
    context = _contexts.get(run.pk)
    if context is None:
        if len(_contexts) > 64:
            _contexts.clear()
        repository = Repository.objects.get(pk=run.repository_id)
        keyword_set = KeywordSet.objects.filter(pk=run.keyword_set_id).first()
        context = _contexts[run.pk] = (repository, keyword_set)
    run.repository, run.keyword_set = context
    part.run = run
    return part, run, etag


@dataclass
class _Fetched:
    """What a step fetched, before its transaction."""

    page: Page | None = None
    etag: PageETag | None = None
    notes: list[tuple[str, list[dict]]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    split: tuple[datetime, datetime] | None = None


def _fetch(part: SyncPart, run: SyncRun, client: ForgeClient, etag: PageETag | None) -> _Fetched:
    """The part's next page (or batch of per-issue comments); raises what the forge raised."""
    got = _Fetched()
    if part.phase == Phase.NOTES:
        for number in part.notes_pending[:NOTES_PER_STEP]:
            items: list[dict] = []
            try:
                for p in client.iter_pages(client.issue_comments_url(number)):
                    items.extend(p.items)
            except FatalForgeError as exc:
                if exc.status not in (404, 410):
                    raise
                got.skipped.append(f"comments of #{number} skipped: {exc}")  # issue gone
            got.notes.append((number, items))
        return got
    got.etag = etag
    got.page = client.get_page(part.next_url, got.etag.etag if got.etag else None)
    if got.page.not_modified:
        got.page.next_url = (got.etag.next_url or None) if got.etag else None
    elif (
        run.parts_wanted > 1
        and part.pages == 0
        and part.window_start is None
        and part.window_end is None
        and got.page.next_url
    ):
        got.split = _newest(client, part, got.page)
    return got


def _lock_part(part: SyncPart) -> bool:
    """Lock the part's row; whether it still is where this step found it."""
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    select = (
        "SELECT chain, status, phase, next_url, notes_pending FROM ingest_syncpart"  # noqa: S608
        f" WHERE id = %s{lock}",
        [part.pk],
    )
    if connection.vendor == "postgresql":
        # The page and the cursor commit together, so a commit lost in a crash only rewinds
        # the cursor: no need to wait for the disk flush.
        rows = _batch(("SET LOCAL synchronous_commit TO OFF", []), select)
    else:
        rows = _sql(*select)
    if not rows:
        return False
    chain, status, phase, next_url, notes = rows[0]
    return (
        chain == part.chain
        and status in SyncRun.ACTIVE
        and phase == part.phase
        and next_url == part.next_url
        and (phase != Phase.NOTES or _json(notes) == part.notes_pending)
    )


def _add_to_run(
    run: SyncRun, tally: Tally, client: ForgeClient, worker: str, estimate: int | None
) -> bool:
    """Add a step's figures to its run under the run's row lock; False if the run has ended
    (failed through another part)."""
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    sql = f"SELECT status, pages, worker_pages FROM ingest_syncrun WHERE id = %s{lock}"  # noqa: S608
    status, pages, worker_pages = _sql(sql, [run.pk])[0]
    if status not in SyncRun.ACTIVE:
        run.status = status
        return False
    worker_pages = _json(worker_pages) or {}
    worker_pages[worker] = worker_pages.get(worker, 0) + tally.pages
    counters = {name: getattr(tally, name) for name in Tally.COUNTERS}
    counters.update(requests=client.requests, retries=client.retries)
    sets = [f"{name} = {name} + %s" for name in counters]
    params: list[Any] = list(counters.values())
    sets += ["worker_pages = %s", "heartbeat_at = %s", "status = %s", "next_attempt_at = NULL"]
    params += [json.dumps(worker_pages), _when(timezone.now()), Status.RUNNING]
    if client.quota_remaining is not None:
        sets.append("quota_remaining = %s")
        params.append(client.quota_remaining)
    if client.quota_reset is not None:
        sets.append("quota_reset_at = %s")
        params.append(_when(client.quota_reset))
    if tally.max_updated_seen is not None:
        newest = _when(tally.max_updated_seen)
        sets.append(
            "max_updated_seen = CASE WHEN max_updated_seen IS NULL OR max_updated_seen < %s"
            " THEN %s ELSE max_updated_seen END"
        )
        params += [newest, newest]
    if estimate is not None:
        # The first page of a listing tells how many follow (when the forge says).
        sets.append("pages_estimate = %s")
        params.append(pages + estimate)
    _sql(f"UPDATE ingest_syncrun SET {', '.join(sets)} WHERE id = %s", [*params, run.pk])  # noqa: S608
    client.requests = client.retries = 0
    return True


def _etag_statement(run: SyncRun, page: Page, tally: Tally) -> tuple[str, list[Any]]:
    """Keep a stored page's ETag (only once the page itself is stored: a 304 must never hide a
    lost page)."""
    return (
        "INSERT INTO ingest_pageetag (repository_id, url, etag, next_url, max_updated_at,"
        " updated_at) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (repository_id, url)"
        " DO UPDATE SET etag = excluded.etag, next_url = excluded.next_url,"
        " max_updated_at = excluded.max_updated_at, updated_at = excluded.updated_at",
        [
            run.repository_id, page.url, page.etag, page.next_url or "",
            _when(tally.page_newest), _when(timezone.now()),
        ],
    )  # fmt: skip


def step_part(part_id: int, chain: str | None = None, worker: str = "") -> Step:
    """Fetch and store one page of a part; safe to call twice for the same page.

    `chain` is the token the task was queued with (None: no check, for one-process drivers);
    `worker` names who stored the page, for the run's per-worker page counts.

    The common step (a page stored, the part goes on) is a few plain statements; the rare
    ones (a split, a phase change, the part's or the run's end) go through the ORM.
    """
    loaded = _load(part_id)
    if loaded is None:
        return Step(more=False)
    part, run, etag = loaded
    if not part.is_active or (chain is not None and chain != part.chain):
        return Step(more=False)
    if not run.is_active:  # failed (or finished) through another part
        SyncPart.objects.filter(pk=part.pk, status__in=SyncRun.ACTIVE).update(status=run.status)
        return Step(more=False)
    client = client_for(run.repository, session=_session())
    client.secondary_streak = run.rate_limit_waits
    now = timezone.now()
    if part.status != Status.RUNNING:
        SyncPart.objects.filter(pk=part.pk).update(
            status=Status.RUNNING, heartbeat_at=now, next_attempt_at=None
        )
    if run.started_at is None or run.status != Status.RUNNING:
        SyncRun.objects.filter(pk=run.pk, status__in=SyncRun.ACTIVE).update(
            status=Status.RUNNING, started_at=run.started_at or now, heartbeat_at=now
        )
    try:
        got = _fetch(part, run, client, etag)
    except RateLimited as exc:
        return _wait(part, client, exc)
    except ForgeError as exc:
        return _fail(part, client, exc)

    page, tally = got.page, Tally()
    with transaction.atomic():
        if not _lock_part(part):
            return Step(more=False)  # stored by another task of the part, which goes on
        repository = run.repository
        next_url: str | None = None
        if part.phase == Phase.NOTES:
            for number, items in got.notes:
                store_comments(repository, client, items, tally, issue_number=number)
            part.notes_pending = part.notes_pending[len(got.notes) :]
            tally.pages += len(got.notes)
        else:
            assert page is not None
            tally.pages += 1
            if page.not_modified:
                tally.not_modified += 1
                if part.window_end and got.etag and got.etag.max_updated_at:
                    tally.passed_end = got.etag.max_updated_at >= part.window_end
            elif part.phase == Phase.ISSUES:
                matcher = matcher_for(repository, run.keyword_set)
                store_issues(
                    repository, client, page.items, matcher, tally, run.until, part.window_end
                )
                part.notes_pending = [*part.notes_pending, *tally.notes]
            else:
                store_comments(repository, client, page.items, tally, window_end=part.window_end)
            next_url = None if tally.passed_end else page.next_url
        estimate = None
        if (
            page is not None
            and page.pages_estimate
            and part.window_start is None
            and part.pages == 0
            and query_param(page.url, "page") in (None, "1")
        ):
            estimate = page.pages_estimate - 1  # this page is counted already
        if not _add_to_run(run, tally, client, worker or "inline", estimate):
            SyncPart.objects.filter(pk=part.pk).update(status=run.status)
            return Step(more=False)  # failed through another part: this page is kept anyway
        part.chain = _token()
        spawned: list[SyncPart] = []
        keep_etag = page is not None and page.etag and not page.not_modified
        etags = [_etag_statement(run, page, tally)] if keep_etag and page else []
        if next_url and got.split is None and not got.skipped:
            # The common case: the part goes on.
            move = (
                "UPDATE ingest_syncpart SET next_url = %s, chain = %s, pages = pages + %s,"
                " status = %s, heartbeat_at = %s, notes_pending = %s WHERE id = %s",
                [
                    next_url, part.chain, tally.pages, Status.RUNNING, _when(timezone.now()),
                    json.dumps(part.notes_pending), part.pk,
                ],
            )  # fmt: skip
            _batch(move, *etags)
            part.next_url, part.status = next_url, Status.RUNNING
        else:
            spawned = _transition(part, run.pk, client, tally, got, next_url)
            if etags:
                _batch(*etags)
    return Step(
        more=part.is_active,
        chain=part.chain,
        spawned=[(p.pk, p.chain) for p in spawned],
    )


def _transition(
    part: SyncPart,
    run_id: int,
    client: ForgeClient,
    tally: Tally,
    got: _Fetched,
    next_url: str | None,
) -> list[SyncPart]:
    """The rare end of a step, through the ORM (the run's row is locked already): a split, a
    move to the per-issue comments, the end of the part or of the run, errors to record."""
    run = SyncRun.objects.select_related("repository").get(pk=run_id)
    step = part
    part = SyncPart.objects.get(pk=step.pk)
    part.chain, part.notes_pending = step.chain, step.notes_pending
    spawned: list[SyncPart] = []
    for message in got.skipped:
        _record_error(run, message)
    part.pages += tally.pages
    part.status, part.heartbeat_at = Status.RUNNING, timezone.now()
    if got.split is not None:
        # Every boundary is after the last update on this first page: nothing stored here
        # belongs to a new part.
        bounds = _slices(*got.split, run.parts_wanted)
        if bounds:
            spawned = _split(run, part, client, bounds)
    if next_url:
        part.next_url = next_url
    elif part.phase == Phase.ISSUES and part.notes_pending:
        part.phase, part.next_url = Phase.NOTES, ""
        if run.phase == Phase.ISSUES:
            run.phase = Phase.NOTES
    elif not (part.phase == Phase.NOTES and part.notes_pending):
        spawned += _part_done(run, part, client)
    part.save()
    run.save(update_fields=["phase", "status", "finished_at", "errors"])
    step.status, step.phase, step.next_url = part.status, part.phase, part.next_url
    return spawned


def _wait(part: SyncPart, client: ForgeClient, exc: RateLimited) -> Step:
    limit = getattr(settings, "INGEST_MAX_RATE_LIMIT_WAITS", 50)
    if part.run.rate_limit_waits >= limit:
        message = f"still rate limited after {limit} waits: {exc}"
        return _fail(part, client, FatalForgeError(message))
    with transaction.atomic():
        # Part first, then run: the order a page's transaction takes them in.
        part = SyncPart.objects.select_for_update().get(pk=part.pk)
        part.status, part.next_attempt_at = Status.WAITING, exc.retry_at
        part.heartbeat_at = timezone.now()
        part.save(update_fields=["status", "next_attempt_at", "heartbeat_at"])
        run = SyncRun.objects.select_for_update().get(pk=part.run_id)
        _add_client_figures(run, client)
        if run.is_active:
            run.status = Status.WAITING
        run.next_attempt_at = exc.retry_at
        run.rate_limit_waits = F("rate_limit_waits") + 1
        run.heartbeat_at = timezone.now()
        _record_error(run, f"rate limited until {exc.retry_at.isoformat()}: {exc}")
        run.save()
    log.info("sync %s waits for the rate limit until %s", run.pk, exc.retry_at)
    return Step(more=True, wait_until=exc.retry_at, chain=part.chain)


def _fail(part: SyncPart, client: ForgeClient, exc: ForgeError) -> Step:
    with transaction.atomic():
        # The other parts see the run failed at their next page and stop.
        part = SyncPart.objects.select_for_update().get(pk=part.pk)
        part.status = Status.FAILED
        part.save(update_fields=["status"])
        run = SyncRun.objects.select_for_update().get(pk=part.run_id)
        _add_client_figures(run, client)
        run.status = Status.FAILED
        run.finished_at = timezone.now()
        _record_error(run, str(exc))
        run.save()
    log.warning("sync %s failed: %s", run.pk, exc)
    return Step(more=False)


def run_inline(
    run: SyncRun, sleep: Callable[[float], None] = time.sleep, max_steps: int | None = None
) -> SyncRun:
    """Drive every part of a run to its end in this process (the command line, tests,
    benchmarks): the part due first, page after page, then the next part."""
    steps = 0
    while max_steps is None or steps < max_steps:
        active = SyncRun.ACTIVE
        part = (
            SyncPart.objects.filter(run=run, status__in=active, run__status__in=active)
            .order_by(F("next_attempt_at").asc(nulls_first=True), "id")
            .first()
        )
        if part is None:
            break
        if part.next_attempt_at and part.status == Status.WAITING:
            sleep(max(0.0, (part.next_attempt_at - timezone.now()).total_seconds()))
        chain: str | None = part.chain
        while chain and (max_steps is None or steps < max_steps):
            result = step_part(part.pk, chain, worker="inline")
            steps += 1
            chain = result.chain if result.more else None
            if result.wait_until is not None:
                sleep(max(0.0, (result.wait_until - timezone.now()).total_seconds()))
    run.refresh_from_db()
    return run


# -- single issues (URL lists) ----------------------------------------------------------------


def hydrate_issue(
    issue: Issue, tally: Tally | None = None, client: ForgeClient | None = None
) -> Issue:
    """Fetch one issue and its comments by number (issues known only by URL)."""
    repository = issue.repository
    client = client or client_for(repository)
    tally = tally if tally is not None else Tally()
    try:
        page = client.get_page(client.issue_url(issue.number))
    except FatalForgeError as exc:
        if exc.status == 410:
            issue.state = "deleted"
            issue.fetched_at = timezone.now()
            issue.save(update_fields=["state", "fetched_at"])
            tally.issues_seen += 1
            return issue
        raise
    fields = client.parse_issue(page.items[0])
    matcher = matcher_for(repository)
    status, found = classify(matcher, fields["title"], fields["body"], fields["labels"])
    raw = page.items[0]
    if page.final_url:
        raw = {**raw, "moved_to": page.final_url}  # a transferred issue: recorded, not copied
    fields.pop("number")
    if not web_origin_ok(repository, fields["url"]):
        fields["url"] = f"{repository.web_url}/issues/{issue.number}"  # see store_issues
    fields["url"] = issue.url or fields["url"]
    first_fetch = issue.fetched_at is None
    for name, value in fields.items():
        setattr(issue, name, value)
    issue.raw, issue.filter_status, issue.matched_keywords = raw, status, found
    issue.fetched_at = timezone.now()
    tally.issues_seen += 1
    tally.issues_new += first_fetch
    tally.issues_updated += not first_fetch
    tally.filtered_out += status == Issue.FilterStatus.FILTERED_OUT
    tally.filtered_in += status != Issue.FilterStatus.FILTERED_OUT
    with transaction.atomic():
        issue.save()
        if issue.comments_count and not page.final_url:
            for p in client.iter_pages(client.issue_comments_url(issue.number)):
                store_comments(repository, client, p.items, tally, issue_number=issue.number)
    return issue


@dataclass
class Hydration:
    """Where a batch of URL-list issues stands: `wait_until` and `rest` when rate limited."""

    run_ids: list[int]
    wait_until: datetime | None = None
    rest: list[int] = field(default_factory=list)


def hydrate_issues(issue_ids: list[int], run_ids: Sequence[int] = ()) -> Hydration:
    """Fetch issues known only by URL, one by one, recording the work as one run of kind
    "hydrate" per repository (progress, requests, comments, an error log), so a lead can watch
    a URL list being fetched. An issue that cannot be fetched is logged on its run and skipped;
    a rate limit puts the runs to wait and returns the issues left (`run_ids` continues them).
    """
    pending = list(
        Issue.objects.filter(pk__in=issue_ids, fetched_at__isnull=True)
        .select_related("repository")
        .order_by("repository_id", "id")
    )
    runs = {
        run.repository_id: run
        for run in SyncRun.objects.filter(pk__in=run_ids, kind=SyncRun.Kind.HYDRATE)
    }
    now = timezone.now()
    for issue in pending:
        if issue.repository_id not in runs:
            runs[issue.repository_id] = SyncRun.objects.create(
                repository=issue.repository,
                kind=SyncRun.Kind.HYDRATE,
                status=Status.RUNNING,
                started_at=now,
                heartbeat_at=now,
                pages_estimate=sum(i.repository_id == issue.repository_id for i in pending),
            )
    clients: dict[int, ForgeClient] = {}
    for i, issue in enumerate(pending):
        run = runs[issue.repository_id]
        client = clients.get(run.repository_id)
        if client is None:
            client = clients[run.repository_id] = client_for(issue.repository, session=_session())
        client.secondary_streak = run.rate_limit_waits
        tally = Tally()
        try:
            hydrate_issue(issue, tally, client)
        except RateLimited as exc:
            for waiting in runs.values():
                if waiting.is_active:
                    waiting.status, waiting.next_attempt_at = Status.WAITING, exc.retry_at
                    waiting.heartbeat_at = timezone.now()
                    waiting.save(update_fields=["status", "next_attempt_at", "heartbeat_at"])
            run.rate_limit_waits += 1
            _add_client_figures(run, client)
            _record_error(run, f"rate limited until {exc.retry_at.isoformat()}: {exc}")
            run.save()
            rest = [x.pk for x in pending[i:]]
            return Hydration([r.pk for r in runs.values()], exc.retry_at, rest)
        except ForgeError as exc:
            log.warning("could not fetch %s: %s", issue, exc)
            _record_error(run, f"#{issue.number} not fetched: {exc}")
        else:
            if issue.state == "deleted":
                _record_error(run, f"#{issue.number} deleted on the forge (410)")
            elif issue.raw.get("moved_to"):
                _record_error(run, f"#{issue.number} moved to {issue.raw['moved_to']}")
        tally.pages = 1  # one issue of the list
        tally.add_to(run)
        _add_client_figures(run, client)
        run.status, run.next_attempt_at = Status.RUNNING, None
        run.heartbeat_at = timezone.now()
        run.save()
    for run in runs.values():
        run.status, run.phase = Status.DONE, Phase.FINISHED
        run.finished_at = run.heartbeat_at = timezone.now()
        run.save(update_fields=["status", "phase", "finished_at", "heartbeat_at"])
    return Hydration([r.pk for r in runs.values()])
