"""lib.superseded: which failed runs a later success of the same kind made stale."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from lib import superseded

T0 = datetime(2024, 5, 1, 12, 0)


@dataclass
class Run:
    pk: int
    kind: str
    status: str
    minutes: int

    @property
    def created_at(self) -> datetime:
        return T0 + timedelta(minutes=self.minutes)


def test_a_failure_is_older_only_than_a_later_success_of_its_own_kind():
    runs = [  # newest first, as the pages list them
        Run(5, "a", "failed", 50),  # the latest of "a": its error is current
        Run(4, "a", "done", 40),
        Run(3, "b", "failed", 30),  # nothing of "b" succeeded after it
        Run(2, "a", "failed", 20),  # older than #4
        Run(1, "a", "failed", 10),  # older than #4 too (the first success after it)
        Run(0, "a", "done", 0),
    ]
    marked = superseded.mark(runs, key=lambda r: r.kind, failed="failed", done="done")
    assert [r.pk for r in marked] == [5, 4, 3, 2, 1, 0]  # the order is kept
    later = {r.pk: getattr(r, "superseded_by", "missing") for r in marked}
    assert {pk: (run.pk if run else None) for pk, run in later.items()} == {
        5: None,
        4: None,
        3: None,
        2: 4,
        1: 4,
        0: None,
    }


def test_a_success_made_at_the_same_moment_but_later_by_id_counts():
    runs = [Run(2, "a", "done", 0), Run(1, "a", "failed", 0)]
    marked = superseded.mark(runs, key=lambda r: r.kind, failed="failed", done="done")
    assert marked[1].superseded_by is marked[0]
