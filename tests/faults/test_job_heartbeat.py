"""A job whose worker runs on another host is taken over within `JOB_STALE_SECONDS` of the
worker's death, and not before, however silent its work is (`lib.jobs.Heartbeat`).

Lena's release is built by a process of "host-a" (a real process whose `socket.gethostname()`
answers "host-a": `tests.faults.as_host`), so this test's process, on the real host name,
cannot ask whether its pid lives and judges it by its heartbeat alone, as a worker of another
host does. A release's build writes nothing to the database while it reads (one read-only
transaction; its progress goes to the cache), and each of its steps is slowed to longer than
the stale time (`JOB_STEP_DELAY_MS`): only the heartbeat's own thread says the worker lives.
Heartbeat 1 s, stale 3 s here (15 s and 120 s by default). This test's process is the second
delivery of the task: it tries to build the release every 50 ms.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
import zipfile
from datetime import timedelta

import pytest
from django.utils import timezone

from dataset.models import Release
from dataset.releases import build_release, create_release, release_path
from labeling.models import ProjectIssue
from lib import jobclaim
from tests.builders import final_issue
from tests.faults.services import ROOT, database_url, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

HEARTBEAT, STALE = 1, 3  # seconds
STEP_MS = 1500  # each step of host-a's build: silent for longer than STALE
OTHER_HOST = "host-a"
BUILD = """
import os, sys, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
from dataset.releases import build_release
build_release(int(sys.argv[1]))
"""


def _deliver_again(release_id: int) -> bool:
    """This process's delivery of the release's task: True when it claimed and built it."""
    try:
        build_release(release_id)
    except jobclaim.Busy:
        return False
    return True


def test_a_release_on_another_host_is_left_to_it_while_it_beats_and_taken_over_once_it_dies(
    project, issues_in_project, lead, tmp_path, settings
):
    settings.EXPORT_ROOT = tmp_path / "exports"
    settings.JOB_HEARTBEAT_SECONDS, settings.JOB_STALE_SECONDS = HEARTBEAT, STALE
    project.annotations_per_issue = 2
    project.save()
    for item in ProjectIssue.objects.filter(project=project).order_by("position")[:3]:
        final_issue(project, item, "C.1", "C.1")
    release = create_release(project, lead, "1.0.0")

    # Host A builds it.
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "DATA_DIR": str(tmp_path),
        "JOB_HEARTBEAT_SECONDS": str(HEARTBEAT),
        "JOB_STALE_SECONDS": str(STALE),
        "JOB_STEP_DELAY_MS": str(STEP_MS),
    }
    host_a = subprocess.Popen(
        [sys.executable, "-m", "tests.faults.as_host", OTHER_HOST, "-c", BUILD, str(release.pk)],
        cwd=ROOT, env=env, start_new_session=True,
    )  # fmt: skip
    try:

        def claimed_by_host_a() -> bool:
            assert host_a.poll() is None, "host A's build ended early"
            row = Release.objects.get(pk=release.pk)
            return row.status == "running" and row.worker.startswith(f"{OTHER_HOST}:")

        wait_for(claimed_by_host_a, 60, "host A to claim the release")
        claimed = Release.objects.get(pk=release.pk)

        # Twice the stale time of silent steps: every delivery finds the job host A's.
        until = time.monotonic() + 2 * STALE
        deliveries = 0
        while time.monotonic() < until:
            assert not _deliver_again(release.pk), "a live host's release was taken over"
            deliveries += 1
            time.sleep(0.05)
        assert deliveries > 20 and host_a.poll() is None  # host A was building all along
        row = Release.objects.get(pk=release.pk)
        assert (row.status, row.worker) == ("running", claimed.worker)
        assert row.heartbeat_at > claimed.heartbeat_at + timedelta(seconds=STALE)

        # Host A dies mid-build (SIGKILL).
        os.kill(host_a.pid, signal.SIGKILL)
        host_a.wait(10)
        killed_at = timezone.now()
        last_heard = Release.objects.get(pk=release.pk).heartbeat_at
    finally:
        if host_a.poll() is None:
            host_a.kill()
            host_a.wait(10)

    deadline = time.monotonic() + 3 * STALE + 30
    while not _deliver_again(release.pk):
        assert time.monotonic() < deadline, "the release of a dead host was never taken over"
        time.sleep(0.05)

    release.refresh_from_db()
    assert release.status == "done" and release.worker == jobclaim.this_worker()
    # Taken over once its last heartbeat was STALE old, not before (host A's pid cannot be
    # asked), and so within STALE of its death (not 30 minutes).
    assert (killed_at - last_heard).total_seconds() < STALE  # it beat until it died
    assert (release.started_at - last_heard).total_seconds() >= STALE
    assert (release.started_at - killed_at).total_seconds() <= STALE + 1
    # Built once: one row, one file, complete, nothing host A left beside it.
    assert Release.objects.filter(project=project).count() == 1
    final = release_path(release)
    assert hashlib.sha256(final.read_bytes()).hexdigest() == release.sha256
    with zipfile.ZipFile(final) as zf:
        assert zf.testzip() is None
        for entry in release.manifest["files"]:
            assert hashlib.sha256(zf.read(entry["name"])).hexdigest() == entry["sha256"]
    assert sorted(p.name for p in final.parent.iterdir()) == [final.name]
