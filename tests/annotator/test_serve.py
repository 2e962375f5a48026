"""`bin/serve` run in the background stops with everything it started when its PID gets SIGTERM
(an engineer's `kill $PID`, a process supervisor), on the embedded first look and with a Celery
worker and beat beside the server."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from django.conf import settings

from tests import embedded

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _processes_of(data_dir: Path) -> list[int]:
    """Every live process started with this DATA_DIR (bin/serve, the server, worker, beat)."""
    marker = f"DATA_DIR={data_dir}".encode() + b"\0"
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker in (proc / "environ").read_bytes():
                stat = (proc / "stat").read_text()
                if stat.rsplit(")", 1)[1].split()[0] != "Z":  # a zombie is already gone
                    found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.mark.slow
@pytest.mark.parametrize("with_workers", [False, True], ids=["embedded", "with-workers"])
def test_sigterm_stops_the_server_and_its_workers(tmp_path, tmp_path_factory, with_workers):
    # bin/serve's own migrate and demo find the run's shared copy (tests.embedded.prepared):
    # what is tested is the stop, not the first set-up (tests/annotator/test_first_look.py).
    embedded.prepared(tmp_path, embedded.shared_tmp(tmp_path_factory))
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(DATA_DIR=str(tmp_path), PORT=str(port), DEBUG="1")
    if with_workers:
        # This test process's own Redis database (one per xdist worker, tests/settings.py).
        env["REDIS_URL"] = settings.REDIS_URL
    serve = subprocess.Popen(
        ["bin/serve"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 240
        while not _listening(port):
            assert serve.poll() is None, "bin/serve ended before it served"
            assert time.monotonic() < deadline, "bin/serve did not listen in 240 s"
            time.sleep(0.05)  # poll often: the test waits on this loop, not on a fixed pause
        # The probe sees what it must: bin/serve (exec'd into the server on the first look),
        # and with workers also the worker and beat.
        assert len(_processes_of(tmp_path)) >= (3 if with_workers else 1)

        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=30)
        deadline = time.monotonic() + 15
        while (_listening(port) or _processes_of(tmp_path)) and (time.monotonic() < deadline):
            time.sleep(0.05)
        assert not _listening(port), "the server still listens after SIGTERM"
        assert not _processes_of(tmp_path), "a process of bin/serve outlived it"
    finally:
        if serve.poll() is None:
            serve.kill()
