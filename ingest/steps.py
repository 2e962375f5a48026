"""The step state machine: fetch one page of a part and, in one transaction, store it.

`step_part()` loads the part, its run and the ETag of its next page in one query, fetches the
page (or a batch of per-issue comments) outside any transaction, then locks the part, stores
the page (`ingest.storage`), adds the figures to the run under the run's row lock, moves the
part's cursor and keeps the page's ETag, only after the page itself. The common step is a few
plain statements through `lib.sql.batch`, four round trips; the rare ends of a step (a split,
a phase change, the part's or the run's end, errors) go through the ORM (`_transition`). Each
stored page gives the part a new chain token, so a duplicate or stale task of the part stops.

`step_part()` never sleeps for a rate limit: it returns the time to try again, and the Celery
task re-queues itself for then. `run_inline` drives every part of a run in one process (the
command line, tests, benchmarks), and may sleep.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from ingest.filtering import matcher_for
from ingest.forges import (
    FatalForgeError,
    ForgeClient,
    ForgeError,
    Page,
    RateLimited,
    client_for,
    query_param,
)
from ingest.hosts import forge_session
from ingest.models import KeywordSet, PageETag, Repository, SyncPart, SyncRun
from ingest.runs import (
    Phase,
    Status,
    add_client_figures,
    new_chain,
    part_done,
    record_error,
    slices,
    split,
    split_points,
)
from ingest.storage import Tally, store_comments, store_issues
from lib import sql

# Table names from the models (`Meta.db_table`), never spelled out in the SQL below.
_SYNCPART_TABLE = SyncPart._meta.db_table
_SYNCRUN_TABLE = SyncRun._meta.db_table
_PAGEETAG_TABLE = PageETag._meta.db_table

log = logging.getLogger(__name__)

NOTES_PER_STEP = 10


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


def _one(statement: str, params: list[Any] | tuple = ()) -> list[tuple]:
    return sql.batch((statement, params))


_PART_FIELDS = [
    "run_id", "listing", "phase", "status", "window_start", "window_end", "next_url",
    "notes_pending", "chain", "pages",
]  # fmt: skip
_RUN_FIELDS = [
    "status", "started_at", "rate_limit_waits", "since", "until", "parts_wanted",
    "keyword_set_id", "repository_id",
]  # fmt: skip
_contexts: dict[int, tuple[Repository, KeywordSet | None]] = {}


def _load(part_id: int) -> tuple[SyncPart, SyncRun, PageETag | None] | None:
    """A part, its run and the ETag of the part's next page, in one query. The instances hold
    what a step reads; the ORM reloads them for the rare writes (`_transition`)."""
    columns = [f"p.{c}" for c in _PART_FIELDS] + [f"r.{c}" for c in _RUN_FIELDS]
    rows = _one(
        f"SELECT {', '.join(columns)}, e.etag, e.next_url, e.max_updated_at"  # noqa: S608
        f" FROM {_SYNCPART_TABLE} p JOIN {_SYNCRUN_TABLE} r ON r.id = p.run_id"
        f" LEFT JOIN {_PAGEETAG_TABLE} e ON e.repository_id = r.repository_id"
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
    part.notes_pending = sql.from_json(part.notes_pending) or []
    for obj, names in (
        (part, ["window_start", "window_end"]),
        (run, ["started_at", "since", "until"]),
    ):
        for name in names:
            setattr(obj, name, sql.aware_time(getattr(obj, name)))
    etag_value, etag_next, etag_newest = row[-3:]
    etag = None
    if etag_value is not None:
        etag = PageETag(
            etag=etag_value, next_url=etag_next, max_updated_at=sql.aware_time(etag_newest)
        )
    # The repository and keyword set: read once per run in this process.
    context = _contexts.get(run.pk)
    if context is None:
        if len(_contexts) > 64:
            _contexts.clear()
        repository = Repository.objects.get(pk=run.repository_id)
        keyword_set = (
            KeywordSet.objects.filter(pk=run.keyword_set_id).first()
            if run.keyword_set_id is not None
            else None
        )
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
        got.split = split_points(client, part, got.page)
    return got


def _lock_part(part: SyncPart) -> bool:
    """Lock the part's row; whether it still is where this step found it."""
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    select = (
        f"SELECT chain, status, phase, next_url, notes_pending FROM {_SYNCPART_TABLE}"  # noqa: S608
        f" WHERE id = %s{lock}",
        [part.pk],
    )
    if connection.vendor == "postgresql":
        # The page and the cursor commit together, so a commit lost in a crash only rewinds
        # the cursor: no need to wait for the disk flush.
        rows = sql.batch(("SET LOCAL synchronous_commit TO OFF", []), select)
    else:
        rows = _one(*select)
    if not rows:
        return False
    chain, status, phase, next_url, notes = rows[0]
    return (
        chain == part.chain
        and status in SyncRun.ACTIVE
        and phase == part.phase
        and next_url == part.next_url
        and (phase != Phase.NOTES or sql.from_json(notes) == part.notes_pending)
    )


def _add_to_run(
    run: SyncRun, tally: Tally, client: ForgeClient, worker: str, estimate: int | None
) -> bool:
    """Add a step's figures to its run under the run's row lock; False if the run has ended
    (failed through another part)."""
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    select = f"SELECT status, pages, worker_pages FROM {_SYNCRUN_TABLE} WHERE id = %s{lock}"  # noqa: S608
    status, pages, worker_pages = _one(select, [run.pk])[0]
    if status not in SyncRun.ACTIVE:
        run.status = status
        return False
    worker_pages = sql.from_json(worker_pages) or {}
    worker_pages[worker] = worker_pages.get(worker, 0) + tally.pages
    counters = {name: getattr(tally, name) for name in Tally.COUNTERS}
    counters.update(requests=client.requests, retries=client.retries)
    sets = [f"{name} = {name} + %s" for name in counters]
    params: list[Any] = list(counters.values())
    sets += ["worker_pages = %s", "heartbeat_at = %s", "status = %s", "next_attempt_at = NULL"]
    params += [json.dumps(worker_pages), sql.db_time(timezone.now()), Status.RUNNING]
    if client.quota_remaining is not None:
        sets.append("quota_remaining = %s")
        params.append(client.quota_remaining)
    if client.quota_reset is not None:
        sets.append("quota_reset_at = %s")
        params.append(sql.db_time(client.quota_reset))
    if tally.max_updated_seen is not None:
        newest = sql.db_time(tally.max_updated_seen)
        sets.append(
            "max_updated_seen = CASE WHEN max_updated_seen IS NULL OR max_updated_seen < %s"
            " THEN %s ELSE max_updated_seen END"
        )
        params += [newest, newest]
    if estimate is not None:
        # The first page of a listing tells how many follow (when the forge says).
        sets.append("pages_estimate = %s")
        params.append(pages + estimate)
    _one(f"UPDATE {_SYNCRUN_TABLE} SET {', '.join(sets)} WHERE id = %s", [*params, run.pk])  # noqa: S608
    client.requests = client.retries = 0
    return True


def _etag_statement(run: SyncRun, page: Page, tally: Tally) -> tuple[str, list[Any]]:
    """Keep a stored page's ETag (only once the page itself is stored: a 304 must never hide a
    lost page)."""
    return (
        f"INSERT INTO {_PAGEETAG_TABLE} (repository_id, url, etag, next_url, max_updated_at,"  # noqa: S608
        " updated_at) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (repository_id, url)"
        " DO UPDATE SET etag = excluded.etag, next_url = excluded.next_url,"
        " max_updated_at = excluded.max_updated_at, updated_at = excluded.updated_at",
        [
            run.repository_id, page.url, page.etag, page.next_url or "",
            sql.db_time(tally.page_newest), sql.db_time(timezone.now()),
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
    client = client_for(run.repository, session=forge_session())
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
        part.chain = new_chain()
        spawned: list[SyncPart] = []
        keep_etag = page is not None and page.etag and not page.not_modified
        etags = [_etag_statement(run, page, tally)] if keep_etag and page else []
        if next_url and got.split is None and not got.skipped:
            # The common case: the part goes on.
            move = (
                f"UPDATE {_SYNCPART_TABLE} SET next_url = %s, chain = %s, pages = pages + %s,"  # noqa: S608
                " status = %s, heartbeat_at = %s, notes_pending = %s WHERE id = %s",
                [
                    next_url, part.chain, tally.pages, Status.RUNNING, sql.db_time(timezone.now()),
                    json.dumps(part.notes_pending), part.pk,
                ],
            )  # fmt: skip
            sql.batch(move, *etags)
            part.next_url, part.status = next_url, Status.RUNNING
        else:
            spawned = _transition(part, run.pk, client, tally, got, next_url)
            if etags:
                sql.batch(*etags)
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
        record_error(run, message)
    part.pages += tally.pages
    part.status, part.heartbeat_at = Status.RUNNING, timezone.now()
    if got.split is not None:
        # Every boundary is after the last update on this first page: nothing stored here
        # belongs to a new part.
        bounds = slices(*got.split, run.parts_wanted)
        if bounds:
            spawned = split(run, part, client, bounds)
    if next_url:
        part.next_url = next_url
    elif part.phase == Phase.ISSUES and part.notes_pending:
        part.phase, part.next_url = Phase.NOTES, ""
        if run.phase == Phase.ISSUES:
            run.phase = Phase.NOTES
    elif not (part.phase == Phase.NOTES and part.notes_pending):
        spawned += part_done(run, part, client)
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
        add_client_figures(run, client)
        if run.is_active:
            run.status = Status.WAITING
        run.next_attempt_at = exc.retry_at
        run.rate_limit_waits = F("rate_limit_waits") + 1
        run.heartbeat_at = timezone.now()
        record_error(run, f"rate limited until {exc.retry_at.isoformat()}: {exc}")
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
        add_client_figures(run, client)
        run.status = Status.FAILED
        run.finished_at = timezone.now()
        record_error(run, str(exc))
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
