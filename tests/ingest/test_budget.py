"""The shared forge budget (ingest.budget) step by step, on the test's Redis: what one worker
may send after what the forge stated, while others' requests are in flight.

Each scenario is a forge token's budget seen by several workers (`Budget` objects with the
same key); the numbers expected are the forge's, worked out by hand from the answers given.
"""

from __future__ import annotations

import time

import pytest
from django.conf import settings

from ingest.budget import Budget

pytestmark = pytest.mark.skipif(not settings.REDIS_URL, reason="needs Redis (bin/test sets it)")


@pytest.fixture
def budget(settings):
    settings.CACHE_KEY_PREFIX = f"budget-test-{time.time_ns()}"
    return lambda: Budget("github", "https://api.github.com", "ghp_" + "x" * 36)


def test_one_probe_opens_a_window_then_exactly_what_the_forge_stated(budget):
    first, second = budget(), budget()
    assert first.take() == 0  # nothing known: the probe goes
    assert 0 < second.take() <= 0.5  # another worker waits a moment for its answer
    reset = time.time() + 30
    first.answered(4, reset, headers=True)  # "4 left until reset"
    assert [second.take() for _ in range(4)] == [0, 0, 0, 0]
    wait = first.take()
    assert 29 <= wait <= 32  # the rest of the window, and the margin for clocks


def test_requests_in_flight_are_taken_off_a_new_windows_allowance(budget):
    a, b, c = budget(), budget(), budget()
    old_reset = time.time() + 0.2
    assert a.take() == 0
    a.answered(10, old_reset, headers=True)
    assert b.take() == 0 and c.take() == 0  # two requests sent, not answered yet
    # The first answer of a new window: 60 left, but b's request may not be counted in it yet.
    new_reset = time.time() + 60
    c.answered(60, new_reset, headers=True)
    allowed = 0
    while a.take() == 0:
        allowed += 1
        assert allowed < 100
    assert allowed == 59


def test_an_earlier_windows_late_answer_changes_nothing(budget):
    a, b = budget(), budget()
    assert a.take() == 0
    a.answered(5, time.time() + 60, headers=True)
    assert b.take() == 0
    b.answered(0, time.time() - 30, headers=True)  # stated about a window already over
    assert [a.take() for _ in range(4)] == [0, 0, 0, 0]
    assert a.take() > 1


def test_the_forge_stating_less_than_the_budget_lowers_it(budget):
    a, b = budget(), budget()
    reset = time.time() + 60
    assert a.take() == 0
    a.answered(50, reset, headers=True)
    assert b.take() == 0
    b.answered(2, reset, headers=True)  # someone else spent the token's quota meanwhile
    assert [a.take() for _ in range(2)] == [0, 0]
    assert a.take() > 1


def test_a_forge_without_rate_limit_headers_is_not_metered(budget):
    a, b = budget(), budget()
    assert a.take() == 0
    a.answered(None, None, headers=False)
    assert [b.take() for _ in range(50)] == [0] * 50


def test_a_request_without_an_answer_frees_the_probe(budget):
    a, b = budget(), budget()
    assert a.take() == 0
    assert b.take() > 0
    a.answered(None, None, headers=True)  # timed out: nothing stated
    assert b.take() == 0  # the next probe
