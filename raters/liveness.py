"""How long a rater's run that says `running` may stay silent and still be someone's.

A run records who runs it (`RaterRun.worker`, "host:pid" of the process) and when it was last
heard of (`heartbeat_at`, written every `JOB_HEARTBEAT_SECONDS` by the run's own thread while
it runs, `lib.jobs.Heartbeat`, whether its backend is fitting, waiting for an endpoint or
storing labels). A run whose command was killed (or whose worker died) stays `running` in the
database; it is *stale* (`RaterRun.stale`, `lib.jobs.Job`'s rule), and may be resumed, when

- its process is on this host and has ended (no such pid), or is this very process but no
  longer runs it (`lib.jobclaim.running_here`: the jobs this process is running now), or has
  not been heard of for `ALIVE_STALE_AFTER` (the pid is taken to be another process's since), or
- nothing has been heard of it for `JOB_STALE_SECONDS` (a process on another host, which this
  one cannot ask: `lib.jobclaim.stale_after`, as for every job).

`raters.runs.run_rater` claims a run through `lib.jobs.Job.claim`, so two processes never run
one run at once (a Celery task delivered again beside a `machine_label --resume`).
"""

from __future__ import annotations

from datetime import timedelta

from lib import jobclaim

# A live process of this host is asked, not timed: only a silence long past any heartbeat (the
# pid given to another process since, or a run stuck for hours) makes its run stale.
ALIVE_STALE_AFTER = timedelta(hours=6)

# Who runs a run: `lib.jobclaim`'s "host:pid", for rater runs too.
this_worker = jobclaim.this_worker
