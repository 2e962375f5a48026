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

Where each job lives: `ingest.filtering` (keyword sets), `ingest.storage` (a page's upsert and
its `Tally`), `ingest.runs` (a run's life: start, queue, resume, the periodic re-sync, splitting,
a part's end), `ingest.steps` (`step_part`, the step state machine, and `run_inline`),
`ingest.hydration` (URL lists). Tasks call these services and never the reverse. This module
keeps the names other code imported from it.
"""

from __future__ import annotations

from ingest.filtering import classify, keyword_set_for, matcher_for, refilter_repository
from ingest.hydration import Hydration, hydrate_issue, hydrate_issues
from ingest.runs import (
    SYNC_PART_TASK,
    enqueue_part,
    resume_run,
    resume_stalled,
    start_sync,
    sync_due_repositories,
)
from ingest.steps import Step, run_inline, step_part
from ingest.storage import Tally, store_comments, store_issues

__all__ = [
    "SYNC_PART_TASK",
    "Hydration",
    "Step",
    "Tally",
    "classify",
    "enqueue_part",
    "hydrate_issue",
    "hydrate_issues",
    "keyword_set_for",
    "matcher_for",
    "refilter_repository",
    "resume_run",
    "resume_stalled",
    "run_inline",
    "start_sync",
    "step_part",
    "store_comments",
    "store_issues",
    "sync_due_repositories",
]
