"""Load benchmark of labeling: next issue and submit over HTTP against gunicorn + Postgres.

    .venv/bin/python bench/labeling_load.py setup          # 40,000 issues, K = 7, users
    .venv/bin/python bench/labeling_load.py realistic      # 50 annotators, 5 s thinking
    .venv/bin/python bench/labeling_load.py saturation     # 20 annotators, no thinking
    .venv/bin/python bench/labeling_load.py page           # labeling page, 100 comments
    .venv/bin/python bench/labeling_load.py floor          # /healthz: the stack's ceiling
    .venv/bin/python bench/labeling_load.py cost           # one cycle's CPU and round trips
    .venv/bin/python bench/labeling_load.py cost --rule adaptive   # the same, adaptive rule
    .venv/bin/python bench/labeling_load.py ahead          # a volunteer 10,000 issues ahead
    .venv/bin/python bench/labeling_load.py all --runs 3   # setup, then each scenario 3 times

Uses its own database (BENCH_DATABASE_URL, default annotator_bench_labeling) and Redis db
(BENCH_REDIS_URL, default db 13), starts gunicorn on 127.0.0.1 with DEBUG off and the
deployment's gunicorn.conf.py (--workers / --threads override it), and drives it with
threads of a lean `http.client` annotator. Each run reports CPU milliseconds per submission
used by the client, the gunicorn workers and PostgreSQL (all PostgreSQL backends on the
host: run it on a quiet machine). Sessions are created directly in the database so no login
(and no password hashing) is part of the measurement. Latencies are client-side on the
loopback interface, so they include the server time plus a fraction of a millisecond.
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
DB_URL = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/annotator_bench_labeling"
)
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
PORT = int(os.environ.get("BENCH_PORT", "8765"))
BASE = f"http://127.0.0.1:{PORT}"
ISSUES = 40_000
K = 7
ANNOTATORS = 50
PROJECT = "bench-labeling"
CSRF = "b" * 32  # an unmasked CSRF secret: the same value goes in the cookie and the header

SERVER_ENV = {
    "DATABASE_URL": DB_URL,
    "REDIS_URL": REDIS_URL,
    "DEBUG": "0",
    "SECRET_KEY": "bench-" + "x" * 40,
    "ALLOWED_HOSTS": "127.0.0.1,localhost",
    "SECURE_SSL_REDIRECT": "0",
    "SESSION_COOKIE_SECURE": "0",
    "CSRF_COOKIE_SECURE": "0",
    "LOG_LEVEL": "WARNING",
}


def django_setup() -> None:
    os.environ.update(SERVER_ENV)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def ensure_database() -> None:
    name = DB_URL.rsplit("/", 1)[1]
    base = DB_URL.rsplit("/", 1)[0]
    out = subprocess.run(
        ["psql", f"{base}/postgres", "-tAc", f"SELECT 1 FROM pg_database WHERE datname='{name}'"],
        capture_output=True,
        text=True,
        check=True,
    )
    if out.stdout.strip() != "1":
        subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", name], check=True)


def setup() -> None:
    """(Re)build the benchmark project: 40,000 issues in a shuffled queue, K = 7."""
    ensure_database()
    django_setup()
    from django.contrib.auth.models import User
    from django.core.cache import cache
    from django.core.management import call_command

    from annotator.models import Membership, Project, Role
    from ingest.models import Comment, Issue, Repository
    from labeling.models import ProjectIssue
    from labeling.setup import order_queue
    from taxonomy.loader import load_study_taxonomy

    call_command("migrate", verbosity=0)
    cache.clear()
    Project.objects.filter(name=PROJECT).delete()
    Repository.objects.filter(owner="bench").delete()
    User.objects.filter(username__startswith="bench-").delete()
    version = load_study_taxonomy(only_if_missing=True)
    project = Project.objects.create(
        name=PROJECT, taxonomy_version=version, annotations_per_issue=K
    )
    repos = [
        Repository.objects.create(
            forge="github", api_url="https://api.github.com", owner="bench", name=f"repo{r}"
        )
        for r in range(4)
    ]
    body = "Training hangs at step 0 with `NCCL timeout`.\n\n```\nTraceback ...\n```\n" * 3
    issues = Issue.objects.bulk_create(
        [
            Issue(
                repository=repos[n % 4],
                number=str(n),
                url=f"https://github.com/bench/repo{n % 4}/issues/{n}",
                title=f"Bench issue {n}",
                body=body,
                state="open",
            )
            for n in range(ISSUES)
        ],
        batch_size=5000,
    )
    ProjectIssue.objects.bulk_create(
        [ProjectIssue(project=project, issue=i) for i in issues], batch_size=5000
    )
    order_queue(project, pilot_size=0, seed=1)
    from django.db import connection

    with connection.cursor() as cursor:
        # Fresh statistics after the bulk load, and no dead rows of the project it replaced,
        # as autovacuum would leave them.
        cursor.execute("VACUUM ANALYZE")
    # One issue with 100 comments, for the page benchmark; a reader holds it.
    heavy = issues[-1]
    Comment.objects.bulk_create(
        [
            Comment(
                issue=heavy,
                forge_id=str(c),
                author=f"user{c}",
                body=f"Comment {c}: tried `torch.distributed` with **NCCL_DEBUG=INFO**.\n\n"
                "```\nRuntimeError: NCCL error in: ../torch/csrc/distributed/c10d\n```\n"
                "- step one\n- step two\n\n![screenshot](https://example.com/s.png)",
            )
            for c in range(100)
        ]
    )
    users = User.objects.bulk_create(
        [User(username=f"bench-{n}", password="!") for n in range(ANNOTATORS)]
        + [User(username="bench-reader", password="!")]
    )
    Membership.objects.bulk_create(
        [Membership(project=project, user=u, role=Role.ANNOTATOR) for u in users]
    )
    print(f"project {project.pk}: {ISSUES} issues, K={K}, {len(users)} users")


def sessions(usernames: list[str]) -> dict[str, str]:
    """Session keys for the users, created directly in the session store."""
    django_setup()
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import User
    from django.contrib.sessions.backends.db import SessionStore

    keys = {}
    for user in User.objects.filter(username__in=usernames):
        store = SessionStore()
        store[SESSION_KEY] = str(user.pk)
        store[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[-1]
        store[HASH_SESSION_KEY] = user.get_session_auth_hash()
        store.create()
        keys[user.username] = store.session_key
    return keys


def start_server(workers: int | None = None, threads: int = 1) -> subprocess.Popen:
    """gunicorn as deployed (gunicorn.conf.py: sync workers, cores + 1), unless told."""
    env = {**os.environ, **SERVER_ENV}
    command = [str(ROOT / ".venv/bin/gunicorn"), "config.wsgi", "-b", f"127.0.0.1:{PORT}"]
    if workers:
        command += ["-w", str(workers)]
    if threads > 1:
        command += ["--worker-class", "gthread", "--threads", str(threads)]
    proc = subprocess.Popen(
        [*command, "--log-level", "warning"],
        cwd=ROOT,
        env=env,
        # Its own log, so a server left behind never holds the caller's output open.
        stdout=open("/tmp/bench_labeling_gunicorn.log", "ab"),  # noqa: SIM115
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    import requests

    for _ in range(120):
        try:
            if requests.get(f"{BASE}/healthz", timeout=5).ok:
                return proc
        except requests.RequestException:
            pass
        time.sleep(0.5)
    proc.terminate()
    raise SystemExit("gunicorn did not come up")


@dataclass
class Reply:
    status_code: int
    headers: dict[str, str]
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode()


class Annotator:
    """A lean HTTP client: a volunteer's session cookie, plain `http.client`, no redirects
    followed. `requests` cost about 2.5 ms of CPU per request, on the same two cores as the
    server it measures."""

    def __init__(self, session_key: str) -> None:
        self.headers = {
            "Cookie": f"sessionid={session_key}; csrftoken={CSRF}",
            "X-CSRFToken": CSRF,
            "Host": f"127.0.0.1:{PORT}",
        }
        self.conn: http.client.HTTPConnection | None = None

    def request(self, method: str, url: str, data: dict | None = None) -> Reply:
        path = url.removeprefix(BASE)
        body = urlencode(data).encode() if data is not None else None
        headers = dict(self.headers)
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
            try:
                self.conn.request(method, path, body=body, headers=headers)
                response = self.conn.getresponse()
                content = response.read()
            except (http.client.HTTPException, ConnectionError):
                # A worker that closes connections after each response (gunicorn's sync
                # workers do): reconnect once.
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
                continue
            if response.getheader("Connection", "").lower() == "close":
                self.conn.close()
                self.conn = None
            return Reply(response.status, dict(response.getheaders()), content)
        raise AssertionError("unreachable")

    def get(self, url: str) -> Reply:
        return self.request("GET", url)

    def post(self, url: str, data: dict) -> Reply:
        return self.request("POST", url, data)


def client(session_key: str) -> Annotator:
    return Annotator(session_key)


def label_payload(project_id: int) -> list[dict]:
    django_setup()
    from annotator.models import Project
    from taxonomy.models import TaxonomyNode

    project = Project.objects.get(pk=project_id)
    themes = TaxonomyNode.objects.filter(version_id=project.taxonomy_version_id, level=2)
    # A few popular themes, so issues both agree and disagree.
    return [
        {"issue_type": str(t.parent_id), "theme": str(t.pk), "summary": "bench"}
        for t in list(themes)[:3]
    ]


def analyze() -> None:
    """Fresh planner statistics, as autovacuum keeps them on a database in steady use.

    Without this the annotation table, grown from zero by the previous run, is estimated at
    a handful of rows and the queue's anti-join degrades into a nested loop (36 ms, not 3).
    """
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "ANALYZE annotator_annotation, annotator_projectissue, annotator_reservation"
        )


def _proc_cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def cpu_by_party(server_pid: int | None) -> dict[str, float]:
    """CPU seconds used so far by this client, the gunicorn workers and PostgreSQL (Linux)."""
    usage = {"client": time.process_time(), "server": 0.0, "postgres": 0.0}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if comm in ("postgres", "postmaster"):
            usage["postgres"] += _proc_cpu(int(entry.name))
        elif server_pid and int(stat[1]) == server_pid:  # a worker: its parent is the master
            usage["server"] += _proc_cpu(int(entry.name))
    return usage


def cpu_ms_per(before: dict[str, float], after: dict[str, float], count: int) -> dict:
    """CPU milliseconds per request or submission, by party, between two `cpu_by_party`."""
    return {
        party: round(1000 * (after[party] - before[party]) / max(count, 1), 2) for party in before
    }


SERVER_PID: int | None = None


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def drive(n_users: int, think: float, duration: float) -> dict:
    """n_users threads: next issue, (think, view the page,) submit; for `duration` seconds."""
    django_setup()
    from annotator.models import Project
    from labeling.models import Annotation

    project = Project.objects.get(name=PROJECT)
    analyze()
    names = [f"bench-{n}" for n in range(n_users)]
    keys = sessions(names)
    labels = label_payload(project.pk)
    before = Annotation.objects.filter(project=project).count()
    next_ms: list[float] = []
    submit_ms: list[float] = []
    ok = [0]
    failures: list[str] = []
    lock = threading.Lock()
    stop = time.monotonic() + duration
    next_url = f"{BASE}/projects/{project.pk}/label/"

    def run(name: str, seed: int) -> None:
        rng = random.Random(seed)
        s = client(keys[name])
        # Spread the first requests over the think time, as people arrive at different times.
        time.sleep(rng.uniform(0, think))
        while time.monotonic() < stop:
            t0 = time.perf_counter()
            r = s.get(next_url)
            t1 = time.perf_counter()
            if r.status_code != 302:
                with lock:
                    failures.append(f"next {r.status_code}")
                break
            item_url = BASE + r.headers["Location"]
            if think:
                s.get(item_url)  # the browser loads the page; not part of the two figures
                time.sleep(rng.uniform(0.5 * think, 1.5 * think))
            t2 = time.perf_counter()
            r = s.post(item_url, data=rng.choice(labels))
            t3 = time.perf_counter()
            with lock:
                next_ms.append((t1 - t0) * 1000)
                if r.status_code == 302:
                    submit_ms.append((t3 - t2) * 1000)
                    ok[0] += 1
                else:
                    failures.append(f"submit {r.status_code}")

    cpu_before = cpu_by_party(SERVER_PID)
    started = time.monotonic()
    threads = [threading.Thread(target=run, args=(n, i)) for i, n in enumerate(names)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    cpu_after = cpu_by_party(SERVER_PID)
    from django.db import connection
    from django.db.models import Count

    connection.close()
    after = Annotation.objects.filter(project=project).count()
    surplus = (
        Annotation.objects.filter(project=project, is_current=True)
        .values("issue_id")
        .annotate(n=Count("id"))
        .filter(n__gt=K)
        .count()
    )
    return {
        "users": n_users,
        "think_s": think,
        "seconds": round(elapsed, 1),
        "submissions": ok[0],
        "submissions_per_s": round(ok[0] / elapsed, 1),
        "stored": after - before,
        "lost": ok[0] - (after - before),
        "issues_over_k": surplus,
        "failures": len(failures),
        "next_p50": round(percentile(next_ms, 50), 1),
        "next_p95": round(percentile(next_ms, 95), 1),
        "next_p99": round(percentile(next_ms, 99), 1),
        "submit_p50": round(percentile(submit_ms, 50), 1),
        "submit_p95": round(percentile(submit_ms, 95), 1),
        "submit_p99": round(percentile(submit_ms, 99), 1),
        # CPU milliseconds per stored submission, by party (all share the same cores).
        "cpu_ms_per_submission": cpu_ms_per(cpu_before, cpu_after, ok[0]),
    }


def floor(n_users: int = 20, duration: float = 15.0) -> dict:
    """The stack's own ceiling: /healthz (no session, one `SELECT 1`) as fast as 20 clients
    can ask. A submission costs two requests, so half this rate bounds saturation from above
    whatever the labeling code does."""
    done = [0]
    stop = time.monotonic() + duration

    def run() -> None:
        c = Annotator("none")
        while time.monotonic() < stop:
            assert c.get(f"{BASE}/healthz").status_code == 200
            done[0] += 1

    before = cpu_by_party(SERVER_PID)
    started = time.monotonic()
    threads = [threading.Thread(target=run) for _ in range(n_users)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    after = cpu_by_party(SERVER_PID)
    return {
        "requests_per_s": round(done[0] / elapsed, 1),
        "cpu_ms_per_request": cpu_ms_per(before, after, done[0]),
    }


def page(requests_n: int = 50) -> dict:
    """Time the labeling page of the 100-comment issue (first, cold, then warm)."""
    django_setup()
    from datetime import timedelta

    from django.contrib.auth.models import User
    from django.core.cache import cache
    from django.utils import timezone

    from annotator.models import Project
    from labeling.models import ProjectIssue, Reservation

    project = Project.objects.get(name=PROJECT)
    heavy = ProjectIssue.objects.filter(project=project).order_by("-issue_id").first()
    reader = User.objects.get(username="bench-reader")
    Reservation.objects.update_or_create(
        project_issue=heavy,
        annotator=reader,
        defaults={"expires_at": timezone.now() + timedelta(days=1), "skipped_at": None},
    )
    cache.clear()  # the first request renders all 101 Markdown texts
    s = client(sessions(["bench-reader"])["bench-reader"])
    url = f"{BASE}/projects/{project.pk}/label/{heavy.public_id}/"
    times = []
    for _ in range(requests_n):
        t0 = time.perf_counter()
        r = s.get(url)
        times.append((time.perf_counter() - t0) * 1000)
        assert r.status_code == 200 and r.text.count('class="comment"') == 100, r.status_code
    warm = times[1:]
    return {
        "cold_ms": round(times[0], 1),
        "warm_p50": round(percentile(warm, 50), 1),
        "warm_p95": round(percentile(warm, 95), 1),
        "bytes": len(r.content),
    }


def _wsgi(key: str, method: str, path: str, body: bytes = b"") -> tuple[str, dict]:
    """One request of a volunteer (session `key`) through the WSGI application, in process."""
    import io

    from config.wsgi import application

    reply = {}

    def start_response(status, headers, exc_info=None):
        reply["status"], reply["headers"] = status, dict(headers)

    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": str(PORT),
        "HTTP_HOST": f"127.0.0.1:{PORT}",
        "HTTP_COOKIE": f"sessionid={key}; csrftoken={CSRF}",
        "HTTP_X_CSRFTOKEN": CSRF,
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "CONTENT_LENGTH": str(len(body)),
        "CONTENT_TYPE": "application/x-www-form-urlencoded",
    }
    result = application(environ, start_response)
    b"".join(result)
    result.close()
    return reply["status"], reply["headers"]


def _label_one(key: str, project_id: int, labels: list[dict], rng: random.Random) -> tuple:
    """Next issue, then a label for it, through `_wsgi`; the two times in milliseconds."""
    t0 = time.perf_counter()
    status, headers = _wsgi(key, "GET", f"/projects/{project_id}/label/")
    t1 = time.perf_counter()
    assert status.startswith("302"), status
    status, _ = _wsgi(key, "POST", headers["Location"], urlencode(rng.choice(labels)).encode())
    t2 = time.perf_counter()
    assert status.startswith("302"), status
    return (t1 - t0) * 1000, (t2 - t1) * 1000


def set_rule(rule: str) -> None:
    """The bench project's stopping rule: "fixed" (K labels) or "adaptive" (at least 2, decided
    when the leading theme is 2 votes ahead, issues needing one more label served first)."""
    django_setup()
    from annotator.models import Project

    Project.objects.filter(name=PROJECT).update(
        stopping_rule=rule, min_labels=2, lead_margin=2, needs_more_first=True
    )


def cost(cycles: int = 700) -> dict:
    """What one submission costs, without contention: K annotators in turn, next + submit
    through the WSGI application in this process (no HTTP, no gunicorn), one request at a
    time.

    Reports this process's CPU and its PostgreSQL backend's CPU per cycle, and the round
    trips to PostgreSQL and Redis. Steadier than `saturation` on a shared machine, so it is
    the figure to compare two versions of the code by; saturation is the one that counts.
    """
    django_setup()

    import psycopg
    import redis.connection
    from django.db import connection

    from annotator.models import Project

    project = Project.objects.get(name=PROJECT)
    analyze()
    # K annotators in turn, as under saturation: each issue is labeled by all of them and
    # leaves the queue (one annotator alone would walk ever further past issues it labeled).
    names = [f"bench-{n}" for n in range(K)]
    keys = sessions(names)
    labels = label_payload(project.pk)
    # Round trips: each statement, and each transaction's COMMIT and the BEGIN psycopg sends
    # ahead of its first statement.
    counts = {"statements": 0, "transactions": 0, "redis": 0}
    patched = [
        (psycopg.Cursor, "execute", "statements"),
        (psycopg.Connection, "commit", "transactions"),
        (psycopg.Connection, "rollback", "transactions"),
        (redis.connection.Connection, "send_packed_command", "redis"),
    ]
    originals = [getattr(owner, name) for owner, name, _ in patched]

    def counting(original, what):
        def counted(*args, **kwargs):
            counts[what] += 1
            return original(*args, **kwargs)

        return counted

    rng = random.Random(1)

    turn = [0]

    def cycle() -> None:
        key = keys[names[turn[0] % K]]
        turn[0] += 1
        _label_one(key, project.pk, labels, rng)

    for _ in range(5 * K):  # warm: connections, prepared statements, caches
        cycle()
    connection.ensure_connection()
    backend = connection.connection.info.backend_pid
    for (owner, name, what), original in zip(patched, originals, strict=True):
        setattr(owner, name, counting(original, what))
    from labeling.models import ProjectIssue, Resolution

    finals = Resolution.objects.filter(project=project)
    done = ProjectIssue.objects.filter(project=project).exclude(status="open")
    finals0, done0 = finals.count(), done.count()
    try:
        cpu0, pg0, t0 = time.process_time(), _proc_cpu(backend), time.perf_counter()
        for _ in range(cycles):
            cycle()
        cpu1, pg1, t1 = time.process_time(), _proc_cpu(backend), time.perf_counter()
    finally:
        for (owner, name, _), original in zip(patched, originals, strict=True):
            setattr(owner, name, original)
    assert connection.connection.info.backend_pid == backend, "the connection was replaced"
    return {
        "rule": project.stopping_rule,
        # Issues finalized automatically in the measured cycles (unanimous or early).
        "finals": finals.count() - finals0,
        # Issues that left the queue (final, or at K in the disagreement queue).
        "done": done.count() - done0,
        "cycles": cycles,
        "wall_ms_per_cycle": round(1000 * (t1 - t0) / cycles, 2),
        "python_cpu_ms_per_cycle": round(1000 * (cpu1 - cpu0) / cycles, 2),
        "postgres_cpu_ms_per_cycle": round(1000 * (pg1 - pg0) / cycles, 2),
        "postgres_round_trips_per_cycle": round(
            (counts["statements"] + 2 * counts["transactions"]) / cycles, 2
        ),
        "redis_commands_per_cycle": round(counts["redis"] / cycles, 2),
    }


def ahead(labeled: int = 10_000, cycles: int = 60) -> dict:
    """One volunteer far ahead of the others, as in the study where everyone labeled every
    issue: they labeled the first `labeled` issues of the queue, which still wait for the
    others. Times their next issue and submission in this process (WSGI, no HTTP)."""
    django_setup()
    from django.contrib.auth.models import User
    from django.db import connection

    from annotator.models import Membership, Project, Role

    project = Project.objects.get(name=PROJECT)
    user, _ = User.objects.get_or_create(username="bench-ahead", defaults={"password": "!"})
    Membership.objects.get_or_create(project=project, user=user, defaults={"role": Role.ANNOTATOR})
    with connection.cursor() as cursor:
        # Their labels of the first open issues in queue order, written directly (no frontier).
        cursor.execute(
            "DELETE FROM annotator_annotation WHERE annotator_id = %s AND project_id = %s",
            [user.pk, project.pk],
        )
        cursor.execute("DELETE FROM annotator_queuefrontier WHERE annotator_id = %s", [user.pk])
        cursor.execute("DELETE FROM annotator_reservation WHERE annotator_id = %s", [user.pk])
        cursor.execute(
            """
            INSERT INTO annotator_annotation (project_id, issue_id, annotator_id, revision,
              is_current, is_pilot, is_false_positive, false_positive_reason, summary, note,
              proposed_category, created_at)
            SELECT pi.project_id, pi.issue_id, %s, 1, true, false, true, 'keyword_in_names',
                   '', '', '', now()
            FROM annotator_projectissue pi
            WHERE pi.project_id = %s AND pi.status = 'open'
            ORDER BY pi.position, pi.id LIMIT %s
            """,
            [user.pk, project.pk, labeled],
        )
        cursor.execute("ANALYZE annotator_annotation")
    key = sessions(["bench-ahead"])["bench-ahead"]
    labels = label_payload(project.pk)
    rng = random.Random(2)
    _wsgi(key, "GET", "/healthz")  # the process's first request imports every view
    next_ms, submit_ms = [], []
    for _ in range(cycles):
        took_next, took_submit = _label_one(key, project.pk, labels, rng)
        next_ms.append(took_next)
        submit_ms.append(took_submit)
    return {
        "labeled_ahead": labeled,
        "first_next_ms": round(next_ms[0], 1),
        "next_p50": round(percentile(next_ms[1:], 50), 1),
        "next_p95": round(percentile(next_ms[1:], 95), 1),
        "submit_p50": round(percentile(submit_ms, 50), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "scenario",
        choices=["setup", "realistic", "saturation", "page", "floor", "cost", "ahead", "all"],
    )
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--workers", type=int, default=None, help="default: gunicorn.conf.py")
    parser.add_argument("--threads", type=int, default=1, help="above 1: gthread workers")
    parser.add_argument(
        "--rule", choices=["fixed", "adaptive"], default=None, help="set the stopping rule first"
    )
    args = parser.parse_args()
    if args.scenario in ("setup", "all"):
        setup()
        if args.scenario == "setup":
            return
    if args.rule is not None:
        set_rule(args.rule)
    if args.scenario in ("cost", "ahead"):
        for _ in range(args.runs):
            print(args.scenario, cost() if args.scenario == "cost" else ahead(), flush=True)
        return
    scenarios = ["realistic", "saturation", "page"] if args.scenario == "all" else [args.scenario]
    server = start_server(args.workers, args.threads)
    global SERVER_PID
    SERVER_PID = server.pid
    try:
        for _ in range(args.runs):
            for name in scenarios:
                if name == "realistic":
                    result = drive(ANNOTATORS, 5.0, args.seconds)
                elif name == "saturation":
                    result = drive(20, 0.0, args.seconds)
                elif name == "floor":
                    result = floor()
                else:
                    result = page()
                print(name, result, flush=True)
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
