"""gunicorn settings shared by docker compose, the Dockerfile, bin/serve and the benchmarks.

Sync workers, cores + 1 of them unless WEB_CONCURRENCY says otherwise. The app's requests
are short and busy on the CPU (next issue and submit ~2 ms each, a labeling page ~25 ms; the
database answers in well under a millisecond), so a worker seldom waits and more workers only
add switching: under saturation 3 workers on 2 cores took 19-34 % less CPU per submission
than 5 and labeled 13-31 % more issues a second, with the realistic load's p95 unchanged
(bench/RESULTS.md, labeling round 4). With threads in one process the short requests waited behind a
page render for the GIL (next-issue p95 34 ms with 3 workers x 4 threads, 20 ms with sync
workers). Sync workers do not keep HTTP connections alive, which is fine behind a reverse
proxy. Where the database is on another host, more workers may pay: set WEB_CONCURRENCY.

Behind a reverse proxy, set FORWARDED_ALLOW_IPS (read by gunicorn itself) to the proxy's
address: X-Forwarded-Proto is then believed from it alone (docs/OPERATIONS.md, "Several hosts").
"""

import multiprocessing
import os

workers = int(os.environ.get("WEB_CONCURRENCY", multiprocessing.cpu_count() + 1))
worker_class = "sync"
timeout = 60


# Prometheus (lib.metrics): with PROMETHEUS_MULTIPROC_DIR each worker writes its values to
# files there and /metrics adds them up. The directory is emptied when the server starts (old
# files would count twice) and a dead worker's gauges are dropped. It must be this service's
# own directory: a Celery worker on the same host uses another one (docs/OPERATIONS.md).
def on_starting(server):
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        os.makedirs(directory, exist_ok=True)
        for name in os.listdir(directory):
            if name.endswith(".db"):
                os.remove(os.path.join(directory, name))


def child_exit(server, worker):
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
