"""The life of a sync run, and splitting a long listing among workers.

A run is created with one part on the issue listing (`start_sync`) and queued by the page
task's Celery name (`enqueue_part`: this module never imports the tasks). An interrupted run
continues from its parts' committed cursors (`resume_run`, `resume_stalled` from celery beat);
`sync_due_repositories` starts the periodic incremental runs. A part that ends opens the
comment listing after the last issue part, and the last part finishes the run (`part_done`).

Splitting (`split_points`, `slices`, `split`): when a run's first page shows more pages and the
run wants N parts, one more request fetches the listing's newest item and the update times
from the first page's last to that newest are cut into N equal slices, each a part of its own
listing from `since=<slice start>` and ending on the first page past the slice's end (see
`ingest.sync` for the whole picture).
"""

from __future__ import annotations

import logging
import math
import threading
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connections, transaction
from django.utils import timezone

from annotator import outbox
from ingest.filtering import keyword_set_for
from ingest.forges import ForgeClient, ForgeError, Page, RateLimited, client_for, redact
from ingest.models import KeywordSet, Repository, SyncPart, SyncRun

log = logging.getLogger(__name__)

MAX_ERRORS_KEPT = 50
Phase = SyncRun.Phase
Status = SyncRun.Status


def new_chain() -> str:
    """A part's fresh chain token: a task carrying an older one stops."""
    return uuid.uuid4().hex


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
    part = SyncPart.objects.create(run=run, next_url=client.issues_url(since), chain=new_chain())
    if enqueue:
        enqueue_part(part.pk, part.chain, queue=queue)
    return run


# The page task, by its Celery name: the tasks module calls this one, never the reverse.
SYNC_PART_TASK = "ingest.tasks.sync_part"


def enqueue_part(
    part_id: int, chain: str, eta: datetime | None = None, queue: str | None = None
) -> None:
    """Queue a part's next task once the transaction commits (on `queue`, else the default).

    Without a broker (the embedded first look, tasks "eager"), `send_task` would put the task
    in a memory queue nobody reads; the task runs in a thread of this process instead, so the
    request that started the sync answers at once and its page follows the run."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        transaction.on_commit(lambda: _run_in_thread(part_id, chain, eta))
        return
    # Through the outbox: recorded with the step that asks for it, handed to the broker on
    # commit, and kept while the broker is away.
    outbox.enqueue(SYNC_PART_TASK, [part_id, chain], eta=eta, queue=queue)


def _run_in_thread(part_id: int, chain: str, eta: datetime | None) -> None:
    delay = max(0.0, (eta - timezone.now()).total_seconds()) if eta else 0.0

    def run() -> None:
        try:
            # A web process has not imported the apps' task modules (a worker does at start).
            app = outbox.celery_app()
            app.loader.import_default_modules()
            app.tasks[SYNC_PART_TASK].apply(args=(part_id, chain))
        finally:
            connections.close_all()  # the thread's own database connection

    timer = threading.Timer(delay, run)
    timer.daemon = True
    timer.start()


def resume_run(run: SyncRun) -> SyncRun:
    """Continue an interrupted run: every unfinished part from its saved cursor, as new chains."""
    run.refresh_from_db()
    if not run.is_active:
        return run
    for part in run.parts.filter(status__in=SyncRun.ACTIVE):
        _resume_part(part)
    return run


def _resume_part(part: SyncPart) -> None:
    part.chain = new_chain()
    part.save(update_fields=["chain"])
    due = part.next_attempt_at if part.status == Status.WAITING else None
    enqueue_part(part.pk, part.chain, eta=due)


def redelivered_chain(part_id: int, chain: str) -> str:
    """The chain a task of a part delivered again by the broker goes on with.

    A worker killed mid-slice never acknowledged its task, so Redis hands it to another
    worker (after its visibility timeout, docs/OPERATIONS.md "Faults"); by then the pages
    the dead worker stored gave the part newer chain tokens, and the old token would stop
    the task. When the part has not been heard of for `INGEST_TAKEOVER_SECONDS` and waits
    for no rate-limit reset, its owner is taken to be dead and the task goes on from the
    committed cursor with the part's current token; otherwise the token is left as it came."""
    part = SyncPart.objects.filter(pk=part_id, status__in=SyncRun.ACTIVE).first()
    if part is None or part.chain == chain:
        return chain
    now = timezone.now()
    if part.next_attempt_at is not None and part.next_attempt_at > now:
        return chain  # its next task waits for the reset: it is queued, not lost
    last = part.heartbeat_at or part.created_at
    if last > now - timedelta(seconds=settings.INGEST_TAKEOVER_SECONDS):
        return chain
    return part.chain


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


def record_error(run: SyncRun, message: str) -> None:
    # Redacted again here: whatever reaches a run's log is shown to leads and staff.
    entry = {"at": timezone.now().isoformat(), "message": redact(message)}
    run.errors = [*run.errors, entry][-MAX_ERRORS_KEPT:]


def add_client_figures(run: SyncRun, client: ForgeClient) -> None:
    run.requests += client.requests
    run.retries += client.retries
    if client.quota_remaining is not None:
        run.quota_remaining = client.quota_remaining
    if client.quota_reset is not None:
        run.quota_reset_at = client.quota_reset
    client.requests = client.retries = 0


def finish(run: SyncRun) -> None:
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


def listing_url(client: ForgeClient, listing: str, since: datetime | None) -> str:
    url = client.issues_url(since) if listing == Phase.ISSUES else client.comments_url(since)
    return url or ""


def slices(first: datetime, newest: datetime, parts: int) -> list[datetime]:
    """Whole-second boundaries cutting (first, newest] into `parts` equal slices."""
    span = (newest - first).total_seconds()
    base = first.replace(microsecond=0)
    bounds: list[datetime] = []
    for i in range(1, parts):
        bound = base + timedelta(seconds=math.floor(span * i / parts) + 1)
        if bound <= newest and (not bounds or bound > bounds[-1]):
            bounds.append(bound)
    return bounds


def split(
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
                next_url=listing_url(client, part.listing, start),
                chain=new_chain(),
            )
            for start, end in zip(bounds, ends, strict=True)
        ]
    )


def part_done(run: SyncRun, part: SyncPart, client: ForgeClient) -> list[SyncPart]:
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
            next_url=listing_url(client, Phase.COMMENTS, run.since),
            chain=new_chain(),
        )
        return [comments]
    if not others.exists():
        finish(run)
    return []


def split_points(
    client: ForgeClient, part: SyncPart, page: Page
) -> tuple[datetime, datetime] | None:
    """(last update on the first page, newest update of the listing) to cut a listing into
    slices, or None when it is not worth it. Costs one request."""
    on_page = [
        t for t in (client.updated_at(part.listing, raw) for raw in page.items) if t is not None
    ]
    if not on_page:
        return None
    try:
        probe = client.get_page(client.newest_url(part.next_url))
    except RateLimited:
        raise
    except ForgeError as exc:
        log.warning("could not split part %s: %s", part.pk, exc)
        return None
    newest = client.updated_at(part.listing, probe.items[0]) if probe.items else None
    if newest is None or newest <= max(on_page):
        return None
    return max(on_page), newest
