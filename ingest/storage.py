"""Storing a page of issues or comments, and the figures a page adds to its run (`Tally`).

On PostgreSQL a page is one statement: the page's rows go as one JSON array (one
`json.dumps`), unpacked by jsonb_to_recordset into an INSERT … SELECT … ON CONFLICT DO UPDATE
in key order (issues also report, in the same statement, which of them existed and with what
update time and comment count; comments find their issue ids in it, one unique-index look-up
each). Upserts are keyed on (repository, number) and (issue, forge_id), so a retried page, or
two workers on one page, never duplicate, and an edited issue or comment is updated in place.
COPY into a temporary table was measured too: no less CPU, three more round trips a page and
per-session tables to keep empty. Other databases (the SQLite first look) use the ORM's bulk
upsert.

Forge links. An issue's `html_url` (`web_url` on GitLab) is stored as its URL only when it is
https on the forge's web host (for a repository on a listed API host: that host, http if the
API URL is http; `ingest.hosts.web_origin_ok`); otherwise the canonical
`<repository web URL>/issues/<number>` is stored instead (the issue URL is unique, so it
cannot be left empty) and the forge's value stays in `raw`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection
from django.utils import timezone

from ingest.filtering import classify
from ingest.forges import ForgeClient
from ingest.hosts import web_origin_ok
from ingest.keywords import Matcher
from ingest.models import Comment, Issue, Repository, SyncRun
from lib import sql

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
    targets = sql.column_names(Issue, ["repository", "fetched_at", *ISSUE_COLUMNS])
    sets = ", ".join(
        f"{qn(c)} = EXCLUDED.{qn(c)}" for c in (sql.column(Issue, n) for n in ISSUE_UPDATE_FIELDS)
    )
    key = sql.column_names(Issue, ["repository", "number"])
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
    key = sql.column_names(Comment, ["issue", "forge_id"])
    targets = sql.column_names(Comment, ["issue", *COMMENT_COLUMNS])
    with connection.cursor() as cursor:
        # Comments of issues not stored (pull requests, outside the window) find no issue.
        # The issue id is a scalar subquery, one unique-index look-up a comment: a join could
        # hash the repository's every issue for each page (the page table has no statistics).
        # OFFSET 0 keeps the subquery whole, so the look-up is not repeated for the filter.
        cursor.execute(
            f"WITH page AS (SELECT * FROM jsonb_to_recordset(%s::jsonb)"  # noqa: S608
            f" AS t({PAGE_COLUMNS['comments']})),"
            f" up AS (INSERT INTO {table} ({targets})"
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
