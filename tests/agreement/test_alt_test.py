# ruff: noqa: RUF002
"""The alternative annotator test (`agreement.alt_test`) against an implementation written here
from the paper's definitions (Calderon, Reichart & Dror, ACL 2025), on data where the naive
reading differs: items labeled by unequal subsets of annotators, ties between the machine and
the left-out human, annotators with unequal numbers of items."""

from __future__ import annotations

import math
import random

import pytest
from scipy import stats

from agreement.alt_test import alt_test

CODES = [f"C.{k}" for k in range(1, 7)] + ["FP"]


def study(seed: int, n_items: int = 80, n_annotators: int = 6, human_error: float = 0.3):
    """Each item has a true code; 3–5 of the annotators label it, each wrong with
    `human_error` (a uniformly drawn other code)."""
    rng = random.Random(seed)
    truth = {f"issue-{i}": rng.choice(CODES) for i in range(n_items)}
    humans: dict[str, dict[str, str]] = {f"ann-{a}": {} for a in range(n_annotators)}
    for item, code in truth.items():
        for annotator in rng.sample(sorted(humans), rng.randint(3, 5)):
            wrong = rng.random() < human_error
            humans[annotator][item] = rng.choice([c for c in CODES if c != code]) if wrong else code
    return truth, humans


def reference(humans, machine, epsilon, q=0.05, min_humans=3, min_items=30):
    """Written from the paper: S(x, i, j) = share of the humans other than j on item i who gave
    x's label; W_f = [S(f) >= S(h_j)], W_h = [S(h_j) >= S(f)]; per j a one-sided t-test of
    d = W_h - W_f against epsilon, computed from the t statistic; BY step-up by hand."""
    by_item: dict[str, list[str]] = {}
    for annotator, labels in humans.items():
        for item in labels:
            by_item.setdefault(item, []).append(annotator)
    usable = {i for i, who in by_item.items() if len(who) >= min_humans and i in machine}
    results = []
    for j, labels in humans.items():
        mine = [i for i in labels if i in usable]
        if len(mine) < min_items:
            continue
        d, wf_all = [], []
        for i in mine:
            rest = [humans[h][i] for h in by_item[i] if h != j]
            s_f = sum(machine[i] == r for r in rest) / len(rest)
            s_h = sum(labels[i] == r for r in rest) / len(rest)
            wf, wh = int(s_f >= s_h), int(s_h >= s_f)
            d.append(wh - wf)
            wf_all.append(wf)
        n = len(d)
        mean = sum(d) / n
        sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
        if sd == 0:
            p = 0.0 if mean < epsilon else 1.0
        else:
            p = float(stats.t.cdf((mean - epsilon) / (sd / math.sqrt(n)), n - 1))
        results.append([j, p, sum(wf_all) / n])
    m = len(results)
    if m < 3:
        return None
    c_m = sum(1 / k for k in range(1, m + 1))
    ordered = sorted(range(m), key=lambda k: results[k][1])
    last = 0
    for rank, k in enumerate(ordered, start=1):
        if results[k][1] <= rank / m * q / c_m:
            last = rank
    won = {results[k][0] for k in ordered[:last]}
    omega = len(won) / m
    rho = sum(r[2] for r in results) / m
    return {"omega": omega, "rho": rho, "p": {r[0]: r[1] for r in results}, "won": won}


def machine_with_accuracy(truth, accuracy: float, seed: int) -> dict[str, str]:
    rng = random.Random(seed)
    return {
        item: code if rng.random() < accuracy else rng.choice([c for c in CODES if c != code])
        for item, code in truth.items()
    }


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("accuracy", [0.55, 0.75, 0.95])
def test_the_test_equals_the_papers_definitions(seed, accuracy):
    truth, humans = study(seed)
    machine = machine_with_accuracy(truth, accuracy, seed + 1000)
    expected = reference(humans, machine, epsilon=0.2)
    result = alt_test(humans, machine, epsilon=0.2)
    assert result.enough_data
    assert result.n_annotators == len(expected["p"])
    assert result.winning_rate == pytest.approx(expected["omega"], abs=1e-12)
    assert result.advantage_probability == pytest.approx(expected["rho"], abs=1e-12)
    for comparison in result.comparisons:
        assert comparison.p_value == pytest.approx(expected["p"][comparison.annotator], abs=1e-9)
        assert comparison.won == (comparison.annotator in expected["won"])
    assert result.passed == (expected["omega"] >= 0.5)


def test_a_rater_that_labels_at_random_fails_and_a_near_perfect_one_passes():
    """Seven volunteers who are right 70 % of the time, as in a real study; a machine that
    gives the true code 98 % of the time represents them better than any one of them, and one
    that draws codes at random does not."""
    truth, humans = study(seed=7, n_items=100, n_annotators=7)
    near_perfect = machine_with_accuracy(truth, 0.98, seed=1)
    rng = random.Random(2)
    at_random = {item: rng.choice(CODES) for item in truth}

    good = alt_test(humans, near_perfect, epsilon=0.2)
    bad = alt_test(humans, at_random, epsilon=0.2)

    assert good.passed is True and good.winning_rate >= 0.5
    assert bad.passed is False and bad.winning_rate == 0.0
    assert good.advantage_probability > bad.advantage_probability


def test_a_larger_margin_is_easier_to_pass():
    truth, humans = study(seed=3, n_items=100)
    machine = machine_with_accuracy(truth, 0.75, seed=4)
    rates = [alt_test(humans, machine, epsilon=e).winning_rate for e in (0.0, 0.1, 0.2, 0.3)]
    assert rates == sorted(rates)
    assert rates[0] < rates[-1]


def test_ties_count_for_both_the_machine_and_the_human():
    """Identical labels everywhere: every item is a tie, W_f = W_h = 1, d = 0 on all items.
    The differences do not vary, so the test is decided exactly: 0 < epsilon rejects."""
    items = [f"i{k}" for k in range(30)]
    humans = {f"a{k}": dict.fromkeys(items, "A.1") for k in range(3)}
    machine = dict.fromkeys(items, "A.1")
    result = alt_test(humans, machine, epsilon=0.2)
    assert [c.machine_advantage for c in result.comparisons] == [1.0, 1.0, 1.0]
    assert [c.human_advantage for c in result.comparisons] == [1.0, 1.0, 1.0]
    assert result.passed is True
    # With no margin the same data cannot reject "the machine is worse".
    assert alt_test(humans, machine, epsilon=0.0).passed is False


def test_not_enough_data_says_how_much_there_is():
    truth, humans = study(seed=5, n_items=30, n_annotators=6)
    machine = machine_with_accuracy(truth, 0.9, seed=6)
    result = alt_test(humans, machine)
    assert result.enough_data is False
    assert result.passed is None and result.winning_rate is None
    # Each count is the annotator's items that have at least three human labels.
    for annotator, labels in humans.items():
        assert result.items_per_annotator[annotator] == len(labels)
        assert result.items_per_annotator[annotator] < 30
    assert result.as_json()["enough_data"] is False

    two = {a: humans[a] for a in list(humans)[:2]}
    assert alt_test(two, machine).enough_data is False


def test_items_with_fewer_than_three_humans_or_no_machine_label_are_left_out():
    truth, humans = study(seed=9, n_items=80)
    machine = machine_with_accuracy(truth, 0.8, seed=10)
    dropped = sorted(machine)[:10]
    for item in dropped:
        del machine[item]
    result = alt_test(humans, machine)
    usable = {
        i for i in truth if i in machine and sum(i in labels for labels in humans.values()) >= 3
    }
    assert result.n_items == len(usable)
    assert result.as_json()["n_items"] == len(usable)
