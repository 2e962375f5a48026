"""How long a rater's run that says `running` may stay silent and still be someone's.

A run records who runs it (`RaterRun.worker`, "host:pid" of the process) and when it was last
heard of (`heartbeat_at`, written as labels arrive and at least every `HEARTBEAT_SECONDS` while
the backend waits for an answer). A run whose command was killed (or whose worker died) stays
`running` in the database; it is *stale* (`RaterRun.stale`, `lib.jobs.Job`'s rule with these
times), and may be resumed, when

- its process is on this host and has ended (no such pid), or is this very process but no
  longer runs it (`lib.jobclaim.running_here`: the jobs this process is running now), or has
  not been heard of for `ALIVE_STALE_AFTER` (past any silent fit), or
- nothing has been heard of it for `STALE_AFTER` (a process on another host, which this one
  cannot ask).

`raters.runs.run_rater` claims a run through `lib.jobs.Job.claim`, so two processes never run
one run at once (a Celery task delivered again beside a `machine_label --resume`).
"""

from __future__ import annotations

from datetime import timedelta

from lib import jobclaim

HEARTBEAT_SECONDS = 30
# A classifier fitting its folds sends no heartbeat for minutes: while its process lives on
# this host, a long silence is work, not death; only a silence long past any fit (or a pid the
# system gave to another process since) makes it stale.
ALIVE_STALE_AFTER = timedelta(hours=6)
STALE_AFTER = timedelta(minutes=10)

# Who runs a run: `lib.jobclaim`'s "host:pid", for rater runs too.
this_worker = jobclaim.this_worker
