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

Among the long tests the longest come first (`COST`: seconds of one test on a quiet host, from
the slowest tests of a whole run; a long test not named there counts `DEFAULT_COST`): a
100-second fuzz chunk handed out last would end the run alone, a minute and more after the
others ran dry (the tier was in collection order, and the fuzz and accessibility chunks, in
tests/security/ and tests/test_accessibility.py, came last). A module's own long tests keep
their order among themselves (its committing tests first, below): they take the module's
places in the cost order one after another.

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


# Seconds on a quiet host (whole runs of 2026-11-28, `--durations`); a rough order is enough.
# Keys are node ids, or node ids without their parameters (every case of the test).
COST: dict[str, float] = {
    "tests/security/test_fuzz.py::test_no_input_makes_a_500_and_a_refusal_writes_nothing": 80,
    "tests/security/test_fuzz.py::test_no_input_makes_a_500_and_a_refusal_writes_nothing"
    "[addresses-api]": 20,
    "tests/test_accessibility.py::"
    "test_every_page_as_every_role_has_no_serious_accessibility_violation": 35,
    "tests/faults/test_worker_kill.py::"
    "test_a_worker_killed_mid_job_leaves_it_to_the_other_which_finishes_it_once": 50,
    "tests/labeling/test_blindness_sweep.py::"
    "test_machine_labels_change_nothing_an_annotator_sees": 34,
    "tests/labeling/test_blindness_sweep.py::test_another_annotator_cannot_tell_what_ada_chose": 18,
    "tests/labeling/test_issue_list.py::"
    "test_the_list_and_its_search_work_on_the_embedded_sqlite_database": 30,
    "tests/annotator/test_serve.py::test_sigterm_stops_the_server_and_its_workers": 28,
    "tests/labeling/test_two_hosts.py::test_two_instances_serve_exactly_k_labels_per_issue": 26,
    "tests/config/test_backup.py::test_a_restored_backup_exports_the_same_bytes": 18,
    "tests/ingest/test_worker.py::"
    "test_exhausted_quota_reschedules_the_task_and_completes_after_the_reset": 18,
    "tests/config/test_beat.py::test_two_beats_send_each_periodic_task_once_per_period": 16,
}
DEFAULT_COST = 5.0


def cost(item: pytest.Item) -> float:
    nodeid = item.nodeid
    return COST.get(nodeid, COST.get(nodeid.split("[", 1)[0], DEFAULT_COST))


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::")[0]


def long_first(items: list[pytest.Item]) -> int:
    """Reorder `items` in place: the long tiers first, the costliest of them first (a module's
    long tests keep their order among themselves), then the rest in their order; how many
    long tests there are."""
    long = [item for item in items if is_long(item)]
    rest = [item for item in items if not is_long(item)]
    # The places in cost order (a stable sort: equal costs keep the collection's order), each
    # filled by the module's next long test in its own order.
    places = [_module(item) for item in sorted(long, key=lambda item: -cost(item))]
    queues: dict[str, list[pytest.Item]] = {}
    for item in long:
        queues.setdefault(_module(item), []).append(item)
    items[:] = [queues[module].pop(0) for module in places] + rest
    return len(long)


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
