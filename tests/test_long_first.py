"""Long tests first under pytest-xdist (tests/plugins/long_first.py): the order the workers
use, and the controller handing the long ones out one at a time."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.plugins import long_first


class FakeItem:
    def __init__(self, name: str, *markers: str) -> None:
        self.name = name
        self.markers = set(markers)

    def get_closest_marker(self, name: str):
        return name if name in self.markers else None


class FakeNode:
    shutting_down = False

    def __init__(self, number: int) -> None:
        self.sent: list[int] = []
        self.gateway = SimpleNamespace(id=f"gw{number}", spec=SimpleNamespace(id=f"gw{number}"))

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def test_the_slow_and_browser_tiers_come_first_in_their_own_order():
    items = [
        FakeItem("a"),
        FakeItem("serve", "slow"),
        FakeItem("b"),
        FakeItem("audit", "browser", "slow"),
        FakeItem("c"),
        FakeItem("click", "browser"),
    ]
    assert long_first.long_first(items) == 3  # type: ignore[arg-type]
    assert [i.name for i in items] == ["serve", "audit", "click", "a", "b", "c"]


class FakeDbItem(FakeItem):
    """A test of module `module`; `commits`: django_db(transaction=True)."""

    def __init__(self, module: str, name: str, commits: bool = False) -> None:
        super().__init__(name)
        self.nodeid = f"tests/{module}.py::{name}"
        self.fixturenames: list[str] = []
        self.commits = commits

    def get_closest_marker(self, name: str):
        if name == "django_db":
            return SimpleNamespace(args=(), kwargs={"transaction": self.commits})
        return None


def test_a_modules_committing_tests_come_before_its_shared_rows_are_opened():
    # pytest-django's order: every committing test after all the others.
    items = [
        FakeDbItem("m1", "reads_shared_a"),
        FakeDbItem("m1", "reads_shared_b"),
        FakeDbItem("m2", "plain"),
        FakeDbItem("m1", "browser", commits=True),
        FakeDbItem("m3", "live", commits=True),
    ]
    long_first.commits_first_in_each_module(items)  # type: ignore[arg-type]
    assert [i.name for i in items] == [
        "browser",
        "reads_shared_a",
        "reads_shared_b",
        "plain",
        "live",
    ]


def _scheduler(tmp_path, monkeypatch, long_count: int, collection: list[str]):
    count = tmp_path / "count"
    count.write_text(str(long_count))
    monkeypatch.setenv(long_first.ENV, str(count))
    options = {"tx": ["3*popen"], "maxschedchunk": None, "dist": "load"}
    config = SimpleNamespace(getvalue=options.__getitem__, getoption=options.__getitem__)
    scheduler = long_first.LongFirstScheduling(config)  # type: ignore[arg-type]
    nodes = [FakeNode(i) for i in range(3)]
    for node in nodes:
        scheduler.add_node(node)  # type: ignore[arg-type]
        scheduler.add_node_collection(node, collection)  # type: ignore[arg-type]
    scheduler.schedule()
    return scheduler, nodes


def test_the_long_tests_go_one_at_a_time_then_the_fast_ones_in_blocks(tmp_path, monkeypatch):
    collection = [f"t{i}" for i in range(400)]
    scheduler, nodes = _scheduler(tmp_path, monkeypatch, 8, collection)
    # Two each (the one a worker runs and its next), not xdist's blocks of 33.
    assert [n.sent for n in nodes] == [[0, 1], [2, 3], [4, 5]]
    scheduler.mark_test_complete(nodes[1], 2, duration=40.0)
    assert nodes[1].sent == [2, 3, 6]  # the next long test to the worker that is free
    scheduler.mark_test_complete(nodes[0], 0, duration=30.0)
    assert nodes[0].sent == [0, 1, 7]
    scheduler.mark_test_complete(nodes[2], 4, duration=20.0)
    # The long ones are out: the fast tests in a block.
    assert nodes[2].sent[:3] == [4, 5, 8] and len(nodes[2].sent) > 10


def test_without_long_tests_it_is_xdists_load_scheduling(tmp_path, monkeypatch):
    _, nodes = _scheduler(tmp_path, monkeypatch, 0, [f"t{i}" for i in range(400)])
    assert [len(n.sent) for n in nodes] == [33, 33, 33]


@pytest.mark.parametrize("dist", ["loadfile", "worksteal"])
def test_other_distributions_keep_their_own_scheduler(dist, monkeypatch):
    monkeypatch.setenv(long_first.ENV, "unused")
    config = SimpleNamespace(getoption={"dist": dist}.__getitem__)
    assert long_first.pytest_xdist_make_scheduler(config, None) is None  # type: ignore[arg-type]
