"""The processes a test starts, for every test that starts one: its own PostgreSQL cluster,
its own Redis, a gunicorn, a `celery worker` (`celery_worker`, the one spelling of its command
line), the test database's URL for them (`database_url`), and `stop_process`.

A test that restarts or stops a service starts its own, on a free port of 127.0.0.1 and in a
temporary directory, and stops it by its process id; the shared PostgreSQL (5432) and Redis
(6379) are never touched. Every process starts in its own session, so that stopping it ends
its children too (a prefork pool's). Every wait polls (50 ms) with a deadline.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[2]
PG_BIN = Path(
    subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True).stdout.strip()
    or "/usr/lib/postgresql/15/bin"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def database_url() -> str:
    """The test database's URL, as a process the test starts reads it (`DATABASE_URL`)."""
    from django.db import connection

    s = connection.settings_dict
    return f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def stop_process(proc: subprocess.Popen, timeout: float = 15) -> None:
    """SIGTERM to the process's session (it and its children), SIGKILL after `timeout`."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# `python -m celery`, as `tests.faults.as_host` runs it: its arguments after "-c".
_CELERY_MAIN = "import sys; sys.argv[0] = 'celery'; from celery.__main__ import main; main()"


def celery_worker(
    env: Mapping[str, str],
    *,
    app: str = "config",
    queues: Sequence[str] = (),
    pool: str = "solo",
    concurrency: int | None = None,
    hostname: str | None = None,
    beat_schedule: Path | None = None,
    loglevel: str = "warning",
    options: Sequence[str] = (),
    stdout: IO[bytes] | int | None = None,
    stderr: IO[bytes] | int | None = None,
    as_host: str | None = None,
) -> subprocess.Popen:
    """A `celery -A app worker` process of the test's own, started from the project's root with
    `env` over this process's environment, in its own session (`stop_process` ends it and its
    pool's children); its output goes to `stdout` / `stderr` (None: the test's own).

    `queues` (-Q; none: the default queue), `pool` (-P; solo: the task runs in the worker's
    process, whose pid is the one a job's row names), `concurrency` (-c), `hostname` (-n, e.g.
    "first@%h"), `beat_schedule` (-B with its schedule file: the worker runs beat too),
    `loglevel` (-l), and `options`, any other option, at the end. Without heartbeat, gossip or
    mingle: a test's workers need not know of each other, and start sooner. `as_host`: the
    worker runs as if on that host (`tests.faults.as_host`: the jobs it claims name
    "as_host:pid", which this host's processes judge by their heartbeat alone)."""
    command = [sys.executable, "-m", "celery", "-A", app, "worker", "-P", pool, "-l", loglevel,
               "--without-heartbeat", "--without-gossip", "--without-mingle"]  # fmt: skip
    if as_host is not None:
        command[1:3] = ["-m", "tests.faults.as_host", as_host, "-c", _CELERY_MAIN]
    if queues:
        command += ["-Q", ",".join(queues)]
    if concurrency is not None:
        command += ["-c", str(concurrency)]
    if hostname is not None:
        command += ["-n", hostname]
    if beat_schedule is not None:
        command += ["-B", "-s", str(beat_schedule)]
    command += options
    return subprocess.Popen(
        command, cwd=ROOT, env={**os.environ, **env}, start_new_session=True,
        stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
    )  # fmt: skip


def _as_postgres(command: list[str]) -> list[str]:
    """initdb and pg_ctl refuse root: run them as the `postgres` user when we are root."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return command


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


class PrivatePostgres:
    """A PostgreSQL cluster of the test's own: initdb into a temporary directory, started on
    a free port, restarted or stopped with pg_ctl, and at the end stopped by its postmaster's
    process id and removed."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="faults-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self.log = self.dir / "server.log"
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        subprocess.run(
            _as_postgres(
                [str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
                 "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"]
            ),
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        self.pid: int | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}"

    def _ctl(self, *args: str, timeout: float = 60) -> None:
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c full_page_writes=off -c max_connections=60"
        )
        subprocess.run(
            _as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.log),
                          "-o", options, "-w", "-t", str(int(timeout)), *args]),
            check=True, capture_output=True, timeout=timeout + 10,
        )  # fmt: skip

    def _read_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        except (FileNotFoundError, ValueError):
            return None

    def start(self) -> None:
        self._ctl("start")
        self.pid = self._read_pid()

    def restart_fast(self) -> None:
        """`pg_ctl restart -m fast`: every session is ended, the server comes back."""
        self._ctl("restart", "-m", "fast")
        self.pid = self._read_pid()

    def stop_fast(self) -> None:
        self._ctl("stop", "-m", "fast")
        self.pid = None

    def createdb(self, name: str) -> str:
        subprocess.run(
            [str(PG_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
             name],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        return f"{self.url}/{name}"

    def close(self) -> None:
        pid = self._read_pid() or self.pid
        if pid is not None:
            try:
                os.kill(pid, signal.SIGQUIT)  # the postmaster's immediate shutdown
                wait_for(lambda: not _alive(pid), 20, "the private PostgreSQL to stop")
            except ProcessLookupError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie child of ours counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def copy_database(source_url: str, target_url: str) -> None:
    """The test database's rows (schema, functions, taxonomy, the test's own) into the private
    cluster: pg_dump piped into pg_restore, no migrations run again."""
    dump = subprocess.Popen(
        [str(PG_BIN / "pg_dump"), "-Fc", "--no-owner", "--no-acl", source_url],
        stdout=subprocess.PIPE,
    )
    restored = subprocess.run(
        [str(PG_BIN / "pg_restore"), "--no-owner", "--no-acl", "-d", target_url],
        stdin=dump.stdout, capture_output=True, timeout=180,
    )  # fmt: skip
    assert dump.stdout is not None
    dump.stdout.close()
    assert dump.wait(60) == 0, "pg_dump failed"
    assert restored.returncode == 0, restored.stderr.decode()[-2000:]


class PrivateRedis:
    """A redis-server of the test's own on a free port (no persistence), stopped by its id."""

    def __init__(self) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
             "--appendonly", "no", "--loglevel", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        wait_for(lambda: _port_open(self.port), 20, "the private Redis to listen")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def close(self) -> None:
        self.stop()


class Gunicorn:
    """The app under gunicorn on a free port, with the environment given."""

    def __init__(self, env: dict[str, str], workers: int = 3) -> None:
        self.port = free_port()
        self.log = Path(tempfile.mkstemp(prefix="faults-gunicorn-", suffix=".log")[1])
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi", "-b", f"127.0.0.1:{self.port}",
             "-w", str(workers), "--log-level", "warning", "--timeout", "60"],
            cwd=ROOT, env={**os.environ, **env}, start_new_session=True,
            stdout=self.log.open("ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        import requests

        def up() -> bool:
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            try:
                return requests.get(f"{self.base}/favicon.ico", timeout=2).status_code == 200
            except requests.RequestException:
                return False

        wait_for(up, 120, "gunicorn to answer")

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        stop_process(self.proc)
        self.log.unlink(missing_ok=True)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def export_built_once(job: Any, path: Path) -> tuple:
    """Asserts that a done export's file (at `path`) is complete (the checksum and size its row
    gives, a ZIP that reads, with its manifest) and alone in its folder (no part of a killed
    build left beside it); returns what tells this build from a later one (the file's inode
    and mtime, the row's checksum and end), to compare after a later delivery."""
    assert sha256(path) == job.sha256 and path.stat().st_size == job.size
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None and "manifest.json" in zf.namelist()
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]
    return (path.stat().st_ino, path.stat().st_mtime_ns, job.sha256, job.finished_at)
