"""Two web hosts, one database: sixteen volunteers label a small project through two gunicorn
instances (each request to the other instance from the one before, as a proxy balancing
round-robin would send them), with two Celery workers on the same Redis. Every issue ends with
exactly K labels by K different volunteers, none over-served, whatever instance each step of
the cycle reached: the queue's reservation and the count live in PostgreSQL, not in a process.

The instances and workers are processes of this test on 127.0.0.1 ports (no Docker), against
the test database; each is stopped by its process id at the end.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator

import psycopg
import pytest
import requests
from django.conf import settings

from tests.builders import http_labeling_study
from tests.faults.services import Gunicorn, celery_worker, database_url, stop_process

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

K = 3
ISSUES = 40
ANNOTATORS = 16
CSRF = "e" * 32  # an unmasked CSRF secret: the same value in the cookie and the header


def _worker(name: str, env: dict[str, str]) -> subprocess.Popen:
    return celery_worker(
        env,
        hostname=f"{name}@%h",
        loglevel="error",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@pytest.fixture
def two_hosts() -> Iterator[list[Gunicorn]]:
    assert settings.REDIS_URL, "this test needs Redis (bin/test sets REDIS_URL)"
    env = {
        "DATABASE_URL": database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "SECRET_KEY": settings.SECRET_KEY,  # the sessions were signed with it
        "CACHE_KEY_PREFIX": f"two-hosts-{time.time_ns()}",  # one cache, as on real hosts
        "DEBUG": "0",
        "SECURE_SSL_REDIRECT": "0",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "LOG_LEVEL": "ERROR",
    }
    started: list[Gunicorn] = []
    workers: list[subprocess.Popen] = []
    try:
        workers = [_worker("host-a", env), _worker("host-b", env)]
        for _ in range(2):
            started.append(Gunicorn(env, workers=2))
        yield started
    finally:
        for server in started:
            server.close()
        for proc in workers:
            stop_process(proc)


def _study(taxonomy_version) -> tuple[int, dict[str, str], list[dict[str, str]]]:
    return http_labeling_study(
        taxonomy_version, "Two hosts", k=K, issues=ISSUES, annotators=ANNOTATORS, seed=3
    )


def test_two_instances_serve_exactly_k_labels_per_issue(two_hosts, taxonomy_version):
    project_id, sessions, labels = _study(taxonomy_version)
    bases = [server.base for server in two_hosts]
    problems: list[str] = []
    saved: Counter = Counter()  # instance that answered a submission as saved
    lock = threading.Lock()
    start = threading.Barrier(ANNOTATORS)

    def volunteer(number: int, name: str) -> None:
        session = requests.Session()
        session.cookies.set("sessionid", sessions[name] or "")
        session.cookies.set("csrftoken", CSRF)
        session.headers["X-CSRFToken"] = CSRF
        turn = number  # alternate instances request by request, starting on either
        start.wait()
        for _ in range(ISSUES + 5):
            base = bases[turn % 2]
            turn += 1
            response = session.get(
                f"{base}/projects/{project_id}/label/", allow_redirects=False, timeout=30
            )
            if response.status_code == 200:
                return  # nothing left for this volunteer
            if response.status_code != 302:
                with lock:
                    problems.append(f"{name} next {response.status_code}")
                return
            item = bases[turn % 2] + response.headers["Location"]  # submitted to the other
            turn += 1
            data = {**labels[(number + turn) % len(labels)], "summary": f"{name}/{turn}"}
            response = session.post(item, data=data, allow_redirects=False, timeout=30)
            if response.status_code != 302:
                with lock:
                    problems.append(f"{name} submit {response.status_code}: {response.text[:200]}")
                return
            with lock:
                saved[item.split("/projects/")[0]] += 1

    threads = [
        threading.Thread(target=volunteer, args=(i, name))
        for i, name in enumerate(sorted(sessions))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a volunteer still labeling after 120 s"
    assert problems == [], problems[:5]

    # The database, read directly: K labels per issue, each by a different volunteer.
    with psycopg.connect(database_url()) as db:
        per_issue = db.execute(
            "SELECT pi.issue_id, count(a.id), count(DISTINCT a.annotator_id)"
            " FROM annotator_projectissue pi LEFT JOIN annotator_annotation a"
            " ON a.issue_id = pi.issue_id AND a.project_id = pi.project_id AND a.is_current"
            " WHERE pi.project_id = %s GROUP BY pi.issue_id",
            [project_id],
        ).fetchall()
        counted = db.execute(
            "SELECT count(*) FROM annotator_projectissue WHERE project_id = %s"
            " AND annotation_count <> %s",
            [project_id, K],
        ).fetchone()[0]  # type: ignore[index]
    assert len(per_issue) == ISSUES
    assert {issue: (n, who) for issue, n, who in per_issue if (n, who) != (K, K)} == {}
    assert counted == 0
    assert sum(saved.values()) == K * ISSUES
    assert set(saved) == set(bases), saved  # both instances stored labels
