"""URL-list hydration: fetch issues known only by their URL, one by one.

Recorded as a run of kind "hydrate" per repository (issues fetched out of those to fetch,
requests, comments, an error log naming the issues that could not be fetched, moved or
deleted ones), so a lead can watch a URL list being fetched.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from ingest.filtering import classify, matcher_for
from ingest.forges import FatalForgeError, ForgeClient, ForgeError, RateLimited, client_for
from ingest.hosts import forge_session, web_origin_ok
from ingest.models import Issue, SyncRun
from ingest.runs import Phase, Status, add_client_figures, record_error
from ingest.storage import Tally, store_comments

# The hydration task, by its Celery name: ingest.tasks calls this module, never the reverse, so
# an upload or a command that queues it imports no Celery (annotator.outbox).
HYDRATE_TASK = "ingest.tasks.hydrate_issues"

log = logging.getLogger(__name__)


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
            client = clients[run.repository_id] = client_for(
                issue.repository, session=forge_session()
            )
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
            add_client_figures(run, client)
            record_error(run, f"rate limited until {exc.retry_at.isoformat()}: {exc}")
            run.save()
            rest = [x.pk for x in pending[i:]]
            return Hydration([r.pk for r in runs.values()], exc.retry_at, rest)
        except ForgeError as exc:
            log.warning("could not fetch %s: %s", issue, exc)
            record_error(run, f"#{issue.number} not fetched: {exc}")
        else:
            if issue.state == "deleted":
                record_error(run, f"#{issue.number} deleted on the forge (410)")
            elif issue.raw.get("moved_to"):
                record_error(run, f"#{issue.number} moved to {issue.raw['moved_to']}")
        tally.pages = 1  # one issue of the list
        tally.add_to(run)
        add_client_figures(run, client)
        run.status, run.next_attempt_at = Status.RUNNING, None
        run.heartbeat_at = timezone.now()
        run.save()
    for run in runs.values():
        run.status, run.phase = Status.DONE, Phase.FINISHED
        run.finished_at = run.heartbeat_at = timezone.now()
        run.save(update_fields=["status", "phase", "finished_at", "heartbeat_at"])
    return Hydration([r.pk for r in runs.values()])
