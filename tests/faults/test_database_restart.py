"""Twenty annotators label over HTTP while PostgreSQL restarts (`pg_ctl restart -m fast`) and
then stops for a while: nothing answered as saved is lost or stored twice, nothing is
half-stored, the app answers 503 with Retry-After (never 500) while the database is away, and
labeling goes on by itself once it is back.

The app runs under gunicorn on a PostgreSQL cluster of the test's own (tests/faults/services):
the test database's rows are copied into it, so no migration runs again. The annotators are
threads with their own sessions; each label carries a token of its own in its summary, by
which the rows in the database are matched to what the annotators were told.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import psycopg
import pytest
import requests
from django.conf import settings

from tests.builders import http_labeling_study
from tests.faults.services import Gunicorn, PrivatePostgres, copy_database, database_url

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ANNOTATORS = 20
ISSUES = 400
CSRF = "f" * 32  # an unmasked CSRF secret: the same value in the cookie and the header


@dataclass
class Study:
    project_id: int
    sessions: dict[str, str]  # username -> session key
    labels: list[dict]


def _build_study(taxonomy_version) -> Study:
    project_id, sessions, labels = http_labeling_study(
        taxonomy_version, "Restart drill", k=3, issues=ISSUES, annotators=ANNOTATORS, seed=30
    )
    return Study(project_id, sessions, labels)


@pytest.fixture
def served(taxonomy_version) -> Iterator[tuple[Study, PrivatePostgres, Gunicorn, str]]:
    study = _build_study(taxonomy_version)
    postgres = PrivatePostgres()
    server = None
    try:
        url = postgres.createdb("annotator_restart")
        copy_database(database_url(), url)
        server = Gunicorn(
            {
                "DATABASE_URL": url,
                "SECRET_KEY": settings.SECRET_KEY,  # the sessions were signed with it
                "CACHE_KEY_PREFIX": f"restart-{time.time_ns()}",
                "DEBUG": "0",
                "LOG_LEVEL": "ERROR",
            }
        )
        yield study, postgres, server, url
    finally:
        if server is not None:
            server.close()
        postgres.close()


@dataclass
class Log:
    """What every annotator was told, shared by the threads."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    replies: list[tuple[float, str, int, str | None]] = field(default_factory=list)
    saved: set[str] = field(default_factory=set)  # tokens answered as saved
    sent: set[str] = field(default_factory=set)  # every token sent at least once
    last_saved: dict[str, float] = field(default_factory=dict)  # annotator -> time
    other: list[str] = field(default_factory=list)

    def reply(self, who: str, what: str, response: requests.Response) -> None:
        with self.lock:
            self.replies.append(
                (time.monotonic(), what, response.status_code, response.headers.get("Retry-After"))
            )
            if response.status_code not in (200, 302, 503):
                self.other.append(f"{who} {what} {response.status_code}: {response.text[:300]}")


def _annotator(
    base: str, study: Study, name: str, number: int, log: Log, stop: threading.Event
) -> None:
    session = requests.Session()
    session.cookies.set("sessionid", study.sessions[name])
    session.cookies.set("csrftoken", CSRF)
    session.headers["X-CSRFToken"] = CSRF
    next_url = f"{base}/projects/{study.project_id}/label/"
    sequence = 0

    def send(method: str, url: str, what: str, **kwargs) -> requests.Response | None:
        """Until an answer other than 503 (waiting as a person would, a moment each time)."""
        while not stop.is_set():
            try:
                response = session.request(method, url, allow_redirects=False, timeout=30, **kwargs)
            except requests.ConnectionError as exc:  # never expected: the web server stays up
                with log.lock:
                    log.other.append(f"{name} {what}: {exc}")
                return None
            log.reply(name, what, response)
            if response.status_code != 503:
                return response
            time.sleep(0.2)
        return None

    while not stop.is_set():
        response = send("GET", next_url, "next")
        if response is None or response.status_code != 302:
            return  # stopped, or nothing left to label (200)
        item_url = base + response.headers["Location"]
        sequence += 1
        token = f"{name}/{sequence}"
        data = {**study.labels[(number + sequence) % len(study.labels)], "summary": token}
        with log.lock:
            log.sent.add(token)
        response = send("POST", item_url, "submit", data=data)
        if response is not None and response.status_code == 302:
            with log.lock:
                log.saved.add(token)
                log.last_saved[name] = time.monotonic()


def test_twenty_annotators_label_through_a_restart_and_a_stop(served):
    study, postgres, server, url = served
    log = Log()
    stop = threading.Event()
    names = sorted(study.sessions)
    threads = [
        threading.Thread(target=_annotator, args=(server.base, study, n, i, log, stop))
        for i, n in enumerate(names)
    ]
    for t in threads:
        t.start()
    try:
        time.sleep(3)
        assert log.saved, "the annotators label before the fault"

        # 1. A fast restart: every session ended at once, the server back at once.
        postgres.restart_fast()
        back = time.monotonic()
        time.sleep(3)

        # 2. Stopped for a while: 503s with Retry-After, then back.
        postgres.stop_fast()
        stopped = time.monotonic()
        time.sleep(2.5)
        postgres.start()
        returned = time.monotonic()
        deadline = returned + 10
        while time.monotonic() < deadline:
            if all(log.last_saved.get(n, 0) > returned for n in names):
                break
            time.sleep(0.05)
        recovered = {n: log.last_saved.get(n, 0) - returned for n in names}
        time.sleep(1)
    finally:
        stop.set()
        for t in threads:
            t.join(40)

    print(  # the figures, for bench notes (pytest -s)
        f"saved {len(log.saved)}, replies {len(log.replies)}, 503s "
        f"{sum(1 for r in log.replies if r[2] == 503)}, stopped {returned - stopped:.1f} s, "
        f"first label after the return per annotator: max {max(recovered.values()):.2f} s"
    )
    assert not log.other, log.other[:5]
    statuses = [status for _, _, status, _ in log.replies]
    assert 500 not in statuses
    unavailable = [r for r in log.replies if r[2] == 503]
    during_stop = [r for r in unavailable if stopped <= r[0] <= returned]
    assert during_stop, "no request was answered while the database was stopped"
    assert all(r[3] is not None and r[3].isdecimal() and int(r[3]) > 0 for r in unavailable), (
        "a 503 without a Retry-After"
    )
    # After the restart, and again within 10 s of the server's return, everyone labels.
    assert any(t > back for t in log.last_saved.values())
    late = {n: round(s, 1) for n, s in recovered.items() if not 0 < s <= 10}
    assert not late, f"annotators with no label saved within 10 s of the return: {late}"

    # The database, read directly: each label answered as saved is stored exactly once, no row
    # was stored for a label never sent, and no submission left half of itself behind.
    with psycopg.connect(url) as db:
        rows = db.execute(
            "SELECT summary, count(*) FROM annotator_annotation WHERE project_id = %s"
            " GROUP BY summary",
            [study.project_id],
        ).fetchall()
        stored = dict(rows)
        mismatched = db.execute(
            "SELECT pi.id, pi.annotation_count, count(a.id) FROM annotator_projectissue pi"
            " LEFT JOIN annotator_annotation a ON a.issue_id = pi.issue_id"
            "  AND a.project_id = pi.project_id AND a.is_current"
            " WHERE pi.project_id = %s GROUP BY pi.id HAVING pi.annotation_count <> count(a.id)",
            [study.project_id],
        ).fetchall()
        reserved_and_labeled = db.execute(
            "SELECT count(*) FROM annotator_reservation r JOIN annotator_projectissue pi"
            " ON pi.id = r.project_issue_id JOIN annotator_annotation a"
            " ON a.issue_id = pi.issue_id AND a.project_id = pi.project_id"
            " AND a.annotator_id = r.annotator_id WHERE pi.project_id = %s",
            [study.project_id],
        ).fetchone()[0]
    assert len(log.saved) > 50
    assert {t: stored.get(t, 0) for t in log.saved if stored.get(t, 0) != 1} == {}
    assert set(stored) <= log.sent, set(stored) - log.sent
    assert max(stored.values()) == 1
    assert mismatched == [], "annotation counts that disagree with the stored annotations"
    assert reserved_and_labeled == 0, "a reservation left beside its stored label"
