"""gunicorn settings shared by docker compose, the Dockerfile, bin/serve and the benchmarks.

Sync workers, (2 x cores) + 1 of them unless WEB_CONCURRENCY says otherwise. A labeling
page takes ~25 ms of CPU and next-issue / submit ~5 ms each; with threads in one process
those short requests waited behind the page for the GIL (next-issue p95 34 ms with 3 workers
x 4 threads, 20 ms with 5 sync workers; bench/RESULTS.md). Sync workers do not keep HTTP
connections alive, which is fine behind a reverse proxy.
"""

import multiprocessing
import os

workers = int(os.environ.get("WEB_CONCURRENCY", 2 * multiprocessing.cpu_count() + 1))
worker_class = "sync"
timeout = 60
