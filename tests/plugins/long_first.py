"""Long tests first, each to the next free worker, under pytest-xdist (issue 22).

The slow and browser tiers (`slow`, `browser` markers) are about 80 tests of 5-60 s each; the
rest are ~1,300 tests well under a second. pytest-xdist's `load` scheduling hands each worker
blocks of consecutive tests, so a long test collected late starts late and the run ends with
one worker busy and the others idle. Here, on each worker, the collection is reordered with the
long tiers first (a stable sort: otherwise the order pytest and pytest-django chose), and the
controller's scheduler hands those out one at a time (each worker holds the test it runs and
the next, as xdist requires), then the fast tests in xdist's usual blocks, which fill the gaps
while the last long tests finish: longest-first scheduling.

The controller never collects, so the first worker writes how many long tests lead the order
to a file the controller named in the environment its workers inherit.

Before that, in every run: a module's committing tests come before its other tests. pytest-django
puts every transactional test after all the others, so in a run of one file its browser test
would come while the rows the module shares (`module_db`, an open transaction) are still open;
the harness empties what a committing test wrote, so running them first is safe. Otherwise a
run in one process keeps the files' own order (tests of a module may rely on it).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from xdist.scheduler import LoadScheduling

from tests.harness import transactional

LONG_MARKERS = ("slow", "browser")
ENV = "TEST_LONG_FIRST_FILE"


def is_long(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(name) for name in LONG_MARKERS)


def long_first(items: list[pytest.Item]) -> int:
    """Reorder `items` in place, the long tiers first; how many they are."""
    items.sort(key=lambda item: not is_long(item))
    return sum(map(is_long, items))


def commits_first_in_each_module(items: list[pytest.Item]) -> None:
    """Reorder `items` in place: modules in their order, each one's committing tests first."""
    first_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        first_seen.setdefault(item.nodeid.split("::")[0], index)
    items.sort(key=lambda item: (first_seen[item.nodeid.split("::")[0]], not transactional(item)))


@pytest.hookimpl(trylast=True)  # after pytest-django's own ordering, which the sorts keep
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    commits_first_in_each_module(items)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    count = long_first(items)
    path = os.environ.get(ENV)
    # Every worker sorts the same collection the same way; one of them tells the controller.
    if path and worker == "gw0":
        Path(path).write_text(str(count))


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER") or not config.pluginmanager.hasplugin("xdist"):
        return
    if config.getoption("dist", "no") == "load" and ENV not in os.environ:
        handle, path = tempfile.mkstemp(prefix="long-first-")
        os.close(handle)
        os.environ[ENV] = path
        config.add_cleanup(lambda: (Path(path).unlink(missing_ok=True), os.environ.pop(ENV)))


class LongFirstScheduling(LoadScheduling):
    """xdist's `load` scheduling, but one test at a time while the head of the queue is one of
    the long tests the workers put first."""

    long_count = 0

    def schedule(self) -> None:
        if self.collection is None:  # the first call: every worker has collected
            text = Path(os.environ[ENV]).read_text().strip()
            self.long_count = int(text) if text else 0
        super().schedule()

    def _send_tests(self, node, num: int) -> None:
        if self.pending and self.pending[0] < self.long_count:
            # Enough for the worker to hold two (the one it runs, and its `nextitem`).
            num = max(1, 2 - len(self.node2pending[node]))
        super()._send_tests(node, num)


@pytest.hookimpl(tryfirst=True)  # before xdist's own LoadScheduling
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.getoption("dist") != "load" or ENV not in os.environ:
        return None
    return LongFirstScheduling(config, log)
